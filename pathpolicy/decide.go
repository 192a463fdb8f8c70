package pathpolicy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/tool"
)

// Stable reason codes. The first six are denials; [CodeNotFound] is what a tool reports
// when a path the policy allowed does not exist, and is a failure, not a denial.
const (
	CodeOutsideRoots   = "outside_roots"
	CodeForbiddenPath  = "forbidden_path"
	CodeInvalidPath    = "invalid_path"
	CodeSymlinkEscape  = "symlink_escape"
	CodeTooLarge       = "too_large"
	CodeToolNotAllowed = "tool_not_allowed"
	CodeNotFound       = "not_found"
	CodeAllowed        = "allowed"
)

// ErrInvalidPath marks a path no environment can use: empty, with a NUL byte, a Windows
// drive path, longer than [MaxPathBytes] or with a component longer than [MaxNameBytes].
var ErrInvalidPath = errors.New("invalid path")

// Length limits of a path, as Linux has them (PATH_MAX, NAME_MAX). A longer path names
// nothing on any system the tools reach, and would not fit the command that resolves it.
const (
	MaxPathBytes = 4096
	MaxNameBytes = 255
)

// Normalize turns a model's path into an absolute, cleaned, slash-separated path: backslashes
// become slashes, a relative path is joined with workspace, "." and ".." are removed
// lexically. It does not touch any filesystem and does not decide membership: see [Decide].
func Normalize(workspace, raw string) (string, error) {
	switch {
	case raw == "":
		return "", fmt.Errorf("%w: the path is empty", ErrInvalidPath)
	case strings.ContainsRune(raw, 0):
		return "", fmt.Errorf("%w: the path contains a NUL byte", ErrInvalidPath)
	case strings.ContainsRune(workspace, 0) || !path.IsAbs(workspace):
		return "", fmt.Errorf("%w: workspace %q is not absolute", ErrInvalidPath, workspace)
	case len(raw) > MaxPathBytes:
		return "", fmt.Errorf("%w: the path is %d bytes, over the limit of %d", ErrInvalidPath, len(raw), MaxPathBytes)
	}
	p := strings.ReplaceAll(raw, `\`, "/")
	if len(p) >= 2 && p[1] == ':' && isLetter(p[0]) {
		return "", fmt.Errorf("%w: %q is a Windows drive path; give a path relative to the workspace", ErrInvalidPath, raw)
	}
	for _, c := range strings.Split(p, "/") {
		if len(c) > MaxNameBytes {
			return "", fmt.Errorf("%w: a component of the path is %d bytes, over the limit of %d", ErrInvalidPath, len(c), MaxNameBytes)
		}
	}
	if !path.IsAbs(p) {
		p = path.Join(path.Clean(workspace), p)
	}
	p = path.Clean(p)
	if len(p) > MaxPathBytes {
		return "", fmt.Errorf("%w: the path is %d bytes once joined with the workspace, over the limit of %d", ErrInvalidPath, len(p), MaxPathBytes)
	}
	return p, nil
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// Root is one allowed directory: as configured (made absolute) and as resolved in the
// environment. A path is inside the root when it lies below either form lexically and its
// resolved target lies below the resolved form.
type Root struct {
	Path string
	Real string
	// ViaLink is set when the root is, or passes through, a symbolic link: its resolved path
	// is not where its configured path lies. Such a root admits nothing, since whoever can
	// plant the link would otherwise choose what it opens.
	ViaLink bool
}

// Rules are the parts of a policy that [Decide] needs, with every path absolute and resolved.
type Rules struct {
	ReadRoots  []Root
	WriteRoots []Root
	DenyNames  []string
	// Protected are files and directories no call may touch (the config file, the ledger),
	// lexical and resolved forms both listed.
	Protected []string
}

// Kind is what a resolved path is.
type Kind string

// Kinds.
const (
	KindNone  Kind = ""
	KindFile  Kind = "file"
	KindDir   Kind = "dir"
	KindOther Kind = "other"
)

// Target is one path as the environment resolved it.
type Target struct {
	Raw    string
	Path   string // Normalize's result
	Real   string // every existing symlink followed
	Access tool.Access
	Exists bool
	Kind   Kind
	// Link is set when the path's last component is a symbolic link.
	Link bool
	// ViaLink is set when any symbolic link was followed on the way.
	ViaLink bool
	// Loop is set when resolution followed too many links.
	Loop bool
	// Unresolvable is set when a link's target climbs with ".." out of a directory that
	// does not exist, or out of a file: the kernel refuses such a path, so it names nothing.
	Unresolvable bool
	// Links is the hard link count of a regular file.
	Links int
	Size  int64
}

// Outcome is [Decide]'s answer for one path.
type Outcome struct {
	Allowed   bool
	Code      string
	Message   string
	Retryable bool
}

// Decide judges one resolved target. It is pure: everything it needs is in r and t.
func Decide(r Rules, t Target) Outcome {
	all := r.WriteRoots
	if t.Access != tool.Write {
		all = append(append([]Root(nil), r.ReadRoots...), r.WriteRoots...)
	}
	var roots, linked []Root
	for _, root := range all {
		if root.ViaLink {
			linked = append(linked, root)
		} else {
			roots = append(roots, root)
		}
	}
	if t.Raw == "" || strings.ContainsRune(t.Raw, 0) || strings.ContainsRune(t.Path, 0) || strings.ContainsRune(t.Real, 0) ||
		!path.IsAbs(t.Path) || !path.IsAbs(t.Real) {
		return deny(CodeInvalidPath, "the path is empty, contains a NUL byte or could not be made absolute; give a plain path relative to the workspace", false)
	}
	if t.Loop {
		return deny(CodeInvalidPath, fmt.Sprintf("%s: too many levels of symbolic links (a loop); name a file that is not a symlink loop", t.Raw), true)
	}
	if t.Unresolvable {
		return deny(CodeInvalidPath, fmt.Sprintf("%s: a symbolic link on the way climbs with \"..\" out of a directory that does not exist (or out of a file), so the path names nothing; name the file by its real path", t.Raw), true)
	}
	lexRoot, ok := containing(roots, t.Path, true)
	if !ok {
		for _, l := range linked {
			if backend.Within(l.Path, t.Path) {
				return deny(CodeSymlinkEscape, fmt.Sprintf("%s lies in %s, a configured root that is or passes through a symbolic link; such a root is not used, so nothing in it may be %s; use a path inside %s",
					t.Raw, l.Path, verbPast(t.Access), listRoots(roots)), true)
			}
		}
		return deny(CodeOutsideRoots, fmt.Sprintf("%s is outside the directories this call may %s; use a path inside %s", t.Raw, verb(t.Access), listRoots(roots)), true)
	}
	if n, ok := forbidden(r, t, lexRoot); ok {
		return deny(CodeForbiddenPath, fmt.Sprintf("%s is a protected file (%s); it may not be read or written; work with other files", t.Raw, n), false)
	}
	if _, ok := containing(roots, t.Real, false); !ok {
		if t.ViaLink {
			return deny(CodeSymlinkEscape, fmt.Sprintf("%s leads through a symbolic link to a place outside %s; use a path whose target lies inside", t.Raw, listRoots(roots)), true)
		}
		return deny(CodeOutsideRoots, fmt.Sprintf("%s is outside the directories this call may %s; use a path inside %s", t.Raw, verb(t.Access), listRoots(roots)), true)
	}
	if t.Access == tool.Write && t.Link {
		return deny(CodeForbiddenPath, fmt.Sprintf("%s is a symbolic link; files are not written through links: write %s instead", t.Raw, t.Real), true)
	}
	// A file with several names is one file wherever its names are: reading it through the
	// name inside the roots reads what the names outside hold, writing it changes them. No
	// scan could find every name cheaply, so such a file is refused for both.
	if t.Kind == KindFile && t.Links > 1 {
		return deny(CodeForbiddenPath, fmt.Sprintf("%s has %d hard links, whose other names may lie outside the roots; a file with more than one name is neither read nor written by the file tools", t.Raw, t.Links), false)
	}
	return Outcome{Allowed: true, Code: CodeAllowed}
}

func deny(code, msg string, retryable bool) Outcome {
	return Outcome{Code: code, Message: msg, Retryable: retryable}
}

func verb(a tool.Access) string {
	if a == tool.Write {
		return "write"
	}
	return "read"
}

func verbPast(a tool.Access) string {
	if a == tool.Write {
		return "written"
	}
	return "read"
}

func listRoots(roots []Root) string {
	var ps []string
	for _, r := range roots {
		ps = append(ps, r.Path)
	}
	if len(ps) == 0 {
		return "(no directory is allowed)"
	}
	return strings.Join(ps, ", ")
}

// containing returns the root p lies in. With lexical set, either form of the root counts
// (a workspace reached through a symlinked directory); otherwise only the resolved form does.
func containing(roots []Root, p string, lexical bool) (Root, bool) {
	for _, r := range roots {
		if r.Real != "" && backend.Within(r.Real, p) || lexical && r.Path != "" && backend.Within(r.Path, p) {
			return r, true
		}
	}
	return Root{}, false
}

// forbidden reports the deny name or protected path that t matches: on the raw path's
// components, and on the lexical and the resolved path's components below their root.
func forbidden(r Rules, t Target, root Root) (string, bool) {
	for _, pr := range r.Protected {
		if pr != "" && (backend.Within(pr, t.Path) || backend.Within(pr, t.Real)) {
			return pr, true
		}
	}
	raw := lowerComponents(strings.ReplaceAll(t.Raw, `\`, "/"))
	lex := lowerComponents(below(root, t.Path))
	real := t.Real
	if rr, ok := containing([]Root{root}, t.Real, false); ok {
		real = below(rr, t.Real)
	}
	names := [][]string{raw, lex, lowerComponents(real)}
	for _, pat := range r.DenyNames {
		parts := lowerComponents(pat)
		for _, cs := range names {
			if matchComponents(parts, cs) {
				return pat, true
			}
		}
	}
	return "", false
}

func below(root Root, p string) string {
	for _, base := range []string{root.Real, root.Path} {
		if base != "" && backend.Within(base, p) {
			return strings.TrimPrefix(path.Clean(p), path.Clean(base))
		}
	}
	return p
}

func components(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// MatchName reports whether any pattern matches the path's components (see
// [Config.DenyNames]). Search tools use it to leave out what they found beneath a directory.
func MatchName(patterns []string, p string) bool {
	cs := lowerComponents(strings.ReplaceAll(p, `\`, "/"))
	for _, pat := range patterns {
		if matchComponents(lowerComponents(pat), cs) {
			return true
		}
	}
	return false
}

// lowerComponents is components of p in lower case: names are matched ignoring case.
func lowerComponents(p string) []string { return components(strings.ToLower(p)) }

// matchComponents reports whether the globs of parts (a pattern's components) match
// consecutive components of cs; both are in lower case.
func matchComponents(parts, cs []string) bool {
	if len(parts) == 0 || len(parts) > len(cs) {
		return false
	}
	for i := 0; i+len(parts) <= len(cs); i++ {
		all := true
		for j, part := range parts {
			if ok, err := path.Match(part, cs[i+j]); err != nil || !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
