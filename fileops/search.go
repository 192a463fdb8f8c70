package fileops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/tool"
)

// maxLineChars bounds the text kept of one matching line.
const maxLineChars = 500

// hiddenSlack is how many lines more than max_results a search keeps, for those Hide
// leaves out.
const hiddenSlack = 64

// pipeHead runs "$@" and keeps the first $1 lines of its output, so that a search stops
// early however much it would find; it exits with the program's status (141 when head
// closed the pipe first), or 127 when the program $2 is not installed. Every argument stays
// an argument: no shell parses the pattern or the paths.
const pipeHead = `n=$1; need=$2; shift 2
command -v "$need" >/dev/null 2>&1 || exit 127
exec 3>&1
st=$({ { "$@"; echo $? >&4; } | head -n "$n" >&3; } 4>&1)
exit "${st:-0}"
`

type searchArgs struct {
	Pattern    string `json:"pattern"`
	Glob       string `json:"glob"`
	MaxResults int    `json:"max_results"`
	Target     string `json:"target"`
}

type match struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
	Text string `json:"text,omitempty"`
}

type searchData struct {
	Path      string  `json:"path"`
	Matches   []match `json:"matches"`
	Truncated bool    `json:"truncated"`
	Engine    string  `json:"engine,omitempty"`
}

// searcher runs search_files and remembers which environments lack ripgrep.
type searcher struct {
	opts Options
	mu   sync.Mutex
	noRG map[string]bool
}

func envKey(env backend.Environment) string {
	d := env.Describe()
	return d.Kind + "\x00" + d.Target
}

func (s *searcher) search(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
	p, shown, err := target(inv)
	if err != nil {
		return nil, err
	}
	var a searchArgs
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return nil, fmt.Errorf("fileops: arguments: %w", err)
	}
	limit := a.MaxResults
	if limit <= 0 {
		limit = DefaultMaxSearchResults
	}
	limit = min(limit, s.opts.MaxSearchResults)
	if !inv.Paths["path"].Exists {
		return failure(fsErr(pathpolicy.CodeNotFound, "no such file"), shown, searchData{Path: shown, Matches: []match{}})
	}
	d := searchData{Path: shown, Matches: []match{}}
	var res backend.Result
	var notes []string
	if fo, ok := inv.Env.(backend.FileOps); ok {
		out, fell, err := s.helperSearch(ctx, inv, fo, p, a, limit, d)
		if !fell {
			return out, err
		}
		notes = []string{searchShellNote + " (" + fell2str(err) + ")"}
	}
	d.Engine, res, err = s.shellSearch(ctx, inv.Env, p, a, limit)
	if err != nil {
		return nil, err
	}
	if res.TimedOut || res.Cancelled {
		return failed(CodeIOError, "the search did not finish in time; narrow the path or the pattern", true, d), nil
	}
	s.collect(inv.Env, res.Stdout, limit, &d)
	// find only says that some rg or grep it ran failed, so an error shows as text on
	// stderr with nothing found. A file the kernel sandbox keeps out is unreadable, not a
	// failed search; a complaint naming a hidden file is left out so that it cannot leak
	// the name.
	complaint, denied := s.complaint(inv.Env, res.Stderr)
	if len(d.Matches) == 0 && !denied && complaint != "" {
		return failed(CodeBadPattern, fmt.Sprintf("search failed: %s; check the pattern (a regular expression) and the glob", complaint), true, d), nil
	}
	out := &tool.Output{Content: renderMatches(d), Data: d, Truncated: d.Truncated, Notes: notes}
	if complaint != "" {
		out.Content += "(the search also reported: " + complaint + ")\n"
	}
	return out, nil
}

// shellSearch runs the search as a command in env: find for files, else rg, or grep where
// env has no rg (remembered per environment). It returns the engine that ran.
func (s *searcher) shellSearch(ctx context.Context, env backend.Environment, p string, a searchArgs, limit int) (string, backend.Result, error) {
	if a.Target == "files" {
		res, err := s.run(ctx, env, limit, "find", s.findArgv(p, a, ""))
		return "find", res, err
	}
	key := envKey(env)
	s.mu.Lock()
	skip := s.noRG[key]
	s.mu.Unlock()
	if !skip {
		res, err := s.run(ctx, env, limit, "rg", s.findArgv(p, a, "rg"))
		if err != nil || res.ExitCode != 127 {
			return "rg", res, err
		}
		s.mu.Lock()
		if s.noRG == nil {
			s.noRG = map[string]bool{}
		}
		s.noRG[key] = true
		s.mu.Unlock()
	}
	res, err := s.run(ctx, env, limit, "grep", s.findArgv(p, a, "grep"))
	return "grep", res, err
}

// collect adds the matches of a shell search's output to d, up to limit, leaving out what
// the policy hides; d.Truncated says some were left.
func (s *searcher) collect(env backend.Environment, stdout []byte, limit int, d *searchData) {
	for _, line := range bytes.Split(stdout, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		m, ok := parseMatch(d.Engine, string(line))
		if !ok || s.hidden(env, m.Path) {
			continue
		}
		if len(d.Matches) == limit {
			d.Truncated = true
			return
		}
		m.Path = display(env, m.Path)
		d.Matches = append(d.Matches, m)
	}
}

// searchShellNote is what a search result says when it ran as find and rg or grep although
// the environment has a resident helper.
const searchShellNote = "search ran as find with rg or grep in the environment, not in the resident helper: " +
	"find selects each file and rg or grep opens it again by name"

func fell2str(err error) string {
	if err == nil {
		return "no helper"
	}
	return err.Error()
}

// helperSearch runs the search in the environment's resident helper, which walks the tree by
// descriptor and reads each file through the descriptor it checked ([backend.FileSearch]).
// fell is true (with the reason in err) when there is no helper right now and the caller
// must take the shell road.
func (s *searcher) helperSearch(ctx context.Context, inv *tool.Invocation, fo backend.FileOps, p string, a searchArgs, limit int, d searchData) (*tool.Output, bool, error) {
	root := "/"
	if ws := workspaceOf(inv.Env); ws != "" && backend.Within(ws, p) {
		root = ws
	}
	res, err := fo.FileOp(ctx, backend.FileRequest{
		Op: backend.FileSearch, Path: p, Root: root, Pattern: a.Pattern, Glob: a.Glob,
		FilesOnly: a.Target == "files", MaxResults: limit + 1 + hiddenSlack, MaxBytes: 8 << 20,
		DenyNames: s.opts.DenyNames,
	})
	if errors.Is(err, backend.ErrNoHelper) {
		return nil, true, err
	}
	d.Engine = "helper"
	if err != nil {
		var fe *backend.FileError
		if !errors.As(err, &fe) {
			return nil, false, fmt.Errorf("fileops: search: %w", err)
		}
		switch fe.Code {
		case backend.FileInvalid:
			return failed(CodeBadPattern, fmt.Sprintf("search failed: %s; check the pattern (a regular expression) and the glob", fe.Msg), true, d), false, nil
		case backend.FileIO:
			if strings.Contains(fe.Msg, "did not finish") {
				return failed(CodeIOError, "the search did not finish in time; narrow the path or the pattern", true, d), false, nil
			}
		}
		out, err := failure(helperErr(err), d.Path, d)
		return out, false, err
	}
	engine := "rg"
	if a.Target == "files" {
		engine = "find"
	}
	for _, line := range bytes.Split(res.Data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		m, ok := parseMatch(engine, string(line))
		if !ok || s.hidden(inv.Env, m.Path) {
			continue
		}
		if len(d.Matches) == limit {
			d.Truncated = true
			break
		}
		m.Path = display(inv.Env, m.Path)
		d.Matches = append(d.Matches, m)
	}
	return &tool.Output{Content: renderMatches(d), Data: d, Truncated: d.Truncated}, false, nil
}

func (s *searcher) run(ctx context.Context, env backend.Environment, limit int, need string, argv []string) (backend.Result, error) {
	// A few lines more than asked show whether there is more, even after hidden ones are
	// left out.
	full := append([]string{"sh", "-c", pipeHead, "airlock-search", strconv.Itoa(limit + 1 + hiddenSlack), need}, argv...)
	res, err := env.Exec(ctx, backend.Request{Argv: full, Timeout: backend.FileOpTimeout, MaxOutputBytes: 8 << 20})
	if err != nil {
		return res, fmt.Errorf("fileops: search: %w", err)
	}
	return res, nil
}

// findArgv builds a find call that prunes .git and the deny names and selects regular files
// with a single name (-links 1: a file hard-linked from elsewhere is never read), then either
// prints their names matching the pattern (engine ""), or runs rg or grep -n -E on them. The
// pattern goes in --regexp= or after -e and the files after --, so neither can be taken for
// an option. find does not follow symbolic links, and rg and grep are handed only the files
// it selected.
func (s *searcher) findArgv(p string, a searchArgs, engine string) []string {
	argv := []string{"find", p, "(", "-name", ".git"}
	for _, n := range s.opts.DenyNames {
		n = strings.Trim(n, "/")
		if strings.Contains(n, "/") {
			argv = append(argv, "-o", "-ipath", "*/"+n)
		} else {
			argv = append(argv, "-o", "-iname", n)
		}
	}
	argv = append(argv, ")", "-prune", "-o", "-type", "f", "-links", "1")
	if a.Glob != "" {
		argv = append(argv, "-name", a.Glob)
	}
	switch engine {
	case "rg":
		return append(argv, "-exec", "rg", "--no-config", "--line-number", "--with-filename", "--null", "--no-heading",
			"--color=never", "--max-columns="+strconv.Itoa(maxLineChars), "--max-columns-preview",
			"--regexp="+a.Pattern, "--", "{}", "+")
	case "grep":
		// /dev/null as a second file makes every grep print the file name.
		return append(argv, "-exec", "grep", "-n", "-E", "-e", a.Pattern, "--", "/dev/null", "{}", "+")
	}
	pat := a.Pattern
	if !strings.ContainsAny(pat, "*?[") {
		pat = "*" + pat + "*"
	}
	return append(argv, "-name", pat, "-print")
}

// parseMatch reads one output line: rg's "path\0line:text", grep's "path:line:text", find's
// "path".
func parseMatch(engine, line string) (match, bool) {
	var m match
	var rest string
	switch engine {
	case "find":
		return match{Path: line}, path.IsAbs(line)
	case "rg":
		var ok bool
		if m.Path, rest, ok = strings.Cut(line, "\x00"); !ok {
			return m, false
		}
	default:
		// The path is absolute; the first ":digits:" after it ends it.
		i := 0
		for {
			j := strings.IndexByte(line[i:], ':')
			if j < 0 {
				return m, false
			}
			i += j
			k := i + 1
			for k < len(line) && line[k] >= '0' && line[k] <= '9' {
				k++
			}
			if k > i+1 && k < len(line) && line[k] == ':' {
				m.Path, rest = line[:i], line[i+1:]
				break
			}
			i++
		}
	}
	num, text, ok := strings.Cut(rest, ":")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || !path.IsAbs(m.Path) {
		return m, false
	}
	m.Line = n
	text = strings.ToValidUTF8(strings.ReplaceAll(strings.TrimRight(text, "\r"), "\x00", ""), "\uFFFD")
	if utf8.RuneCountInString(text) > maxLineChars {
		text = string([]rune(text)[:maxLineChars]) + " [line cut]"
	}
	m.Text = text
	return m, true
}

func (s *searcher) hidden(env backend.Environment, p string) bool {
	if s.opts.Hide != nil && s.opts.Hide(p) {
		return true
	}
	return pathpolicy.MatchName(s.opts.DenyNames, display(env, p))
}

func renderMatches(d searchData) string {
	if len(d.Matches) == 0 {
		return fmt.Sprintf("no matches in %s\n", d.Path)
	}
	var b strings.Builder
	for _, m := range d.Matches {
		if m.Line > 0 {
			fmt.Fprintf(&b, "%s:%d:%s\n", m.Path, m.Line, m.Text)
		} else {
			fmt.Fprintf(&b, "%s\n", m.Path)
		}
	}
	if d.Truncated {
		fmt.Fprintf(&b, "(more than %d results; narrow the pattern, the path or the glob)\n", len(d.Matches))
	} else {
		fmt.Fprintf(&b, "(%d results)\n", len(d.Matches))
	}
	return b.String()
}

// complaint returns the first stderr line worth showing, and whether every line was a
// permission refusal (what the kernel sandbox says for a protected file).
func (s *searcher) complaint(env backend.Environment, stderr []byte) (string, bool) {
	first, onlyDenied := "", true
	for _, line := range strings.Split(strings.TrimSpace(string(stderr)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		isDenied := strings.Contains(line, "Permission denied")
		onlyDenied = onlyDenied && isDenied
		// "PATH: Permission denied (os error 13)" (rg), "grep: PATH: Permission denied"
		rest := line
		for _, prefix := range []string{"rg: ", "grep: ", "find: "} {
			rest = strings.TrimPrefix(rest, prefix)
		}
		if p, _, cut := strings.Cut(strings.Trim(rest, "'‘’"), ": "); cut && s.hidden(env, strings.Trim(p, "'‘’")) {
			continue
		}
		if first == "" {
			first = line
		}
	}
	return first, onlyDenied && len(bytes.TrimSpace(stderr)) > 0
}
