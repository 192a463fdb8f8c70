package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/shellrisk"
)

// The classify command shows what the approval gate's classifier makes of a command,
// without running anything. --jsonl serves scripts and tests that judge many commands.
func init() {
	register(command{
		name:    "classify",
		summary: "judge a shell command's risk without running it",
		run:     runClassify,
	})
}

func runClassify(args []string, s stdio) int {
	fs := newFlagSet("classify", "", s)
	asJSON := fs.Bool("json", false, "print the verdict as a JSON object")
	asJSONL := fs.Bool("jsonl", false, "read one JSON-encoded command string per input line and print one JSON verdict per line")
	unconfined := fs.Bool("unconfined", false, "judge as the gate does where nothing confines commands (no kernel sandbox, no container)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock classify [--json] -- 'COMMAND'")
		fmt.Fprintln(fs.Output(), "       airlock classify --jsonl < commands.jsonl")
		fmt.Fprintln(fs.Output(), "\nJudges a shell command (risk: safe, write, network, exec, dangerous) without running it.")
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *asJSONL {
		if fs.NArg() > 0 {
			fmt.Fprintln(s.err, "airlock classify: --jsonl reads commands from standard input, not arguments")
			return 2
		}
		if err := classifyLines(shellrisk.Context{Unconfined: *unconfined}, s.in, s.out); err != nil {
			fmt.Fprintf(s.err, "airlock classify: %v\n", err)
			return 1
		}
		return 0
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	v := shellrisk.ClassifyIn(shellrisk.Context{Unconfined: *unconfined}, strings.Join(fs.Args(), " "))
	if *asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(s.err, "airlock classify: %v\n", err)
			return 1
		}
		return 0
	}
	printVerdict(s.out, v)
	return 0
}

func printVerdict(w io.Writer, v shellrisk.Verdict) {
	line := v.Risk.String()
	if v.HardDeny {
		line += " (hard deny)"
	}
	if !v.Parsed {
		line += " (not parsed)"
	}
	fmt.Fprintln(w, line)
	for _, r := range v.Reasons {
		mark := ""
		if r.HardDeny {
			mark = " [hard deny]"
		}
		fmt.Fprintf(w, "  %-28s %-9s %s%s\n", r.Code, r.Risk, r.Segment, mark)
	}
}

// lineError is the output for an input line that is not a JSON string.
type lineError struct {
	Error string `json:"error"`
	Line  int    `json:"line"`
}

// classifyLines answers each input line with one output line, in order.
func classifyLines(cx shellrisk.Context, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for n := 1; sc.Scan(); n++ {
		var cmd string
		var rec any
		if err := json.Unmarshal(sc.Bytes(), &cmd); err != nil {
			rec = lineError{Error: fmt.Sprintf("line is not a JSON string: %v", err), Line: n}
		} else {
			rec = shellrisk.ClassifyIn(cx, cmd)
		}
		if err := enc.Encode(rec); err != nil {
			return fmt.Errorf("write verdict: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read commands: %w", err)
	}
	return nil
}
