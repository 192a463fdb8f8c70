package pathpolicy

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/tool"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, want string
		err             bool
	}{
		{"relative", "src/a.go", "/work/app/src/a.go", false},
		{"dot", ".", "/work/app", false},
		{"absolute", "/work/app/x", "/work/app/x", false},
		{"dotdot inside", "src/../b", "/work/app/b", false},
		{"dotdot out", "../../etc/passwd", "/etc/passwd", false},
		{"windows separators", `src\pkg\a.go`, "/work/app/src/pkg/a.go", false},
		{"windows dotdot", `..\app-copy\x`, "/work/app-copy/x", false},
		{"unc", `\\server\share\x`, "/server/share/x", false},
		{"trailing slash", "src/", "/work/app/src", false},
		{"unicode", "日本/é.txt", "/work/app/日本/é.txt", false},
		{"empty", "", "", true},
		{"nul", "a\x00b", "", true},
		{"drive", `C:\x`, "", true},
		{"drive slash", "c:/x", "", true},
		{"longest component", strings.Repeat("n", 255), "/work/app/" + strings.Repeat("n", 255), false},
		{"component too long", "a/" + strings.Repeat("n", 256) + "/b", "", true},
		{"component too long, cleaned away", strings.Repeat("n", 256) + "/../b", "", true},
		{"path too long", strings.Repeat("a/", 2100), "", true},
		{"raw too long, short when clean", strings.Repeat("a/../", 1000) + "b", "", true},
		{"140 KB", strings.Repeat("a/", 70_000), "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Normalize("/work/app", tc.raw)
			if (err != nil) != tc.err || tc.err && !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func rules() Rules {
	return Rules{
		ReadRoots:  []Root{{Path: "/work/app", Real: "/work/app"}, {Path: "/usr/share/doc", Real: "/usr/share/doc"}},
		WriteRoots: []Root{{Path: "/work/app", Real: "/work/app"}},
		DenyNames:  DefaultDenyNames,
		Protected:  []string{"/work/app/.airlock/receipts.jsonl"},
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	file := func(raw, lex, real string, a tool.Access) Target {
		return Target{Raw: raw, Path: lex, Real: real, Access: a, Exists: true, Kind: KindFile, Links: 1}
	}
	tests := []struct {
		name string
		t    Target
		want string
	}{
		{"inside", file("a.go", "/work/app/a.go", "/work/app/a.go", tool.Read), CodeAllowed},
		{"write inside", file("a.go", "/work/app/a.go", "/work/app/a.go", tool.Write), CodeAllowed},
		{"new file", Target{Raw: "n.go", Path: "/work/app/n.go", Real: "/work/app/n.go", Access: tool.Write}, CodeAllowed},
		{"root itself", Target{Raw: ".", Path: "/work/app", Real: "/work/app", Access: tool.Read, Exists: true, Kind: KindDir}, CodeAllowed},
		{"read root only", file("/usr/share/doc/x", "/usr/share/doc/x", "/usr/share/doc/x", tool.Read), CodeAllowed},
		{"write to read root", file("/usr/share/doc/x", "/usr/share/doc/x", "/usr/share/doc/x", tool.Write), CodeOutsideRoots},
		{"similar prefix", file("../app-copy/x", "/work/app-copy/x", "/work/app-copy/x", tool.Read), CodeOutsideRoots},
		{"outside", file("/etc/passwd", "/etc/passwd", "/etc/passwd", tool.Read), CodeOutsideRoots},
		{"link out", Target{Raw: "l", Path: "/work/app/l", Real: "/etc/passwd", Access: tool.Read, Exists: true, Kind: KindFile, Link: true, ViaLink: true}, CodeSymlinkEscape},
		{"dir link out", Target{Raw: "d/x", Path: "/work/app/d/x", Real: "/tmp/x", Access: tool.Write, ViaLink: true}, CodeSymlinkEscape},
		{"link into root from outside", Target{Raw: "/tmp/l", Path: "/tmp/l", Real: "/work/app/a", Access: tool.Read, ViaLink: true}, CodeOutsideRoots},
		{"write to in-root link", Target{Raw: "l", Path: "/work/app/l", Real: "/work/app/a", Access: tool.Write, Exists: true, Kind: KindFile, Link: true, ViaLink: true, Links: 1}, CodeForbiddenPath},
		{"read in-root link", Target{Raw: "l", Path: "/work/app/l", Real: "/work/app/a", Access: tool.Read, Exists: true, Kind: KindFile, Link: true, ViaLink: true, Links: 1}, CodeAllowed},
		{"write through dir link", Target{Raw: "al/f", Path: "/work/app/al/f", Real: "/work/app/real/f", Access: tool.Write, ViaLink: true}, CodeAllowed},
		{"hard link write", Target{Raw: "h", Path: "/work/app/h", Real: "/work/app/h", Access: tool.Write, Exists: true, Kind: KindFile, Links: 2}, CodeForbiddenPath},
		{"hard link read", Target{Raw: "h", Path: "/work/app/h", Real: "/work/app/h", Access: tool.Read, Exists: true, Kind: KindFile, Links: 2}, CodeForbiddenPath},
		{"loop", Target{Raw: "l", Path: "/work/app/l", Real: "/work/app", Access: tool.Read, Loop: true}, CodeInvalidPath},
		{"env", file(".env", "/work/app/.env", "/work/app/.env", tool.Read), CodeForbiddenPath},
		{"env deep", file("a/b/.env", "/work/app/a/b/.env", "/work/app/a/b/.env", tool.Read), CodeForbiddenPath},
		{"env upper", file("a/.ENV", "/work/app/a/.ENV", "/work/app/a/.ENV", tool.Read), CodeForbiddenPath},
		{"env variant", file(".env.production", "/work/app/.env.production", "/work/app/.env.production", tool.Read), CodeForbiddenPath},
		{"env in raw only", file("x/.env/../a", "/work/app/a", "/work/app/a", tool.Read), CodeForbiddenPath},
		{"env behind link", Target{Raw: "c.txt", Path: "/work/app/c.txt", Real: "/work/app/.env", Access: tool.Read, Exists: true, Kind: KindFile, Link: true, ViaLink: true, Links: 1}, CodeForbiddenPath},
		{"envrc allowed", file(".envrc", "/work/app/.envrc", "/work/app/.envrc", tool.Read), CodeAllowed},
		{"git hooks", file(".git/hooks/pre-commit", "/work/app/.git/hooks/pre-commit", "/work/app/.git/hooks/pre-commit", tool.Write), CodeForbiddenPath},
		{"git config", file(".git/config", "/work/app/.git/config", "/work/app/.git/config", tool.Write), CodeForbiddenPath},
		{"git config read", file(".git/config", "/work/app/.git/config", "/work/app/.git/config", tool.Read), CodeForbiddenPath},
		{"git config nested repo", file("vendor/x/.git/config", "/work/app/vendor/x/.git/config", "/work/app/vendor/x/.git/config", tool.Write), CodeForbiddenPath},
		{"git config behind link", Target{Raw: "c", Path: "/work/app/c", Real: "/work/app/.git/config", Access: tool.Read, Exists: true, Kind: KindFile, Link: true, ViaLink: true, Links: 1}, CodeForbiddenPath},
		{"git modules", file(".git/modules/lib/hooks/post-checkout", "/work/app/.git/modules/lib/hooks/post-checkout", "/work/app/.git/modules/lib/hooks/post-checkout", tool.Write), CodeForbiddenPath},
		{"git modules config", file(".git/modules/lib/config", "/work/app/.git/modules/lib/config", "/work/app/.git/modules/lib/config", tool.Write), CodeForbiddenPath},
		{"git head allowed", file(".git/HEAD", "/work/app/.git/HEAD", "/work/app/.git/HEAD", tool.Read), CodeAllowed},
		{"config elsewhere allowed", file("src/config/app.go", "/work/app/src/config/app.go", "/work/app/src/config/app.go", tool.Write), CodeAllowed},
		{"hooks elsewhere allowed", file("src/hooks/a.ts", "/work/app/src/hooks/a.ts", "/work/app/src/hooks/a.ts", tool.Read), CodeAllowed},
		{"pem", file("certs/k.pem", "/work/app/certs/k.pem", "/work/app/certs/k.pem", tool.Read), CodeForbiddenPath},
		{"ssh", file(".ssh/config", "/work/app/.ssh/config", "/work/app/.ssh/config", tool.Read), CodeForbiddenPath},
		{"id_rsa", file("id_rsa.pub", "/work/app/id_rsa.pub", "/work/app/id_rsa.pub", tool.Read), CodeForbiddenPath},
		{"ledger", file(".airlock/receipts.jsonl", "/work/app/.airlock/receipts.jsonl", "/work/app/.airlock/receipts.jsonl", tool.Write), CodeForbiddenPath},
		{"nul", file("a\x00", "/work/app/a\x00", "/work/app/a\x00", tool.Read), CodeInvalidPath},
		{"relative real", file("a", "/work/app/a", "a", tool.Read), CodeInvalidPath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Decide(rules(), tc.t)
			if o.Code != tc.want || o.Allowed != (tc.want == CodeAllowed) {
				t.Fatalf("Decide = %+v, want %s", o, tc.want)
			}
			if !o.Allowed && o.Message == "" {
				t.Error("denial without a message")
			}
		})
	}
}

// TestDecideLinkedRoot checks that a root marked ViaLink (it is, or passes through, a
// symbolic link) admits nothing, neither below its lexical path nor below where it leads.
func TestDecideLinkedRoot(t *testing.T) {
	t.Parallel()
	r := Rules{
		ReadRoots:  []Root{{Path: "/work/app", Real: "/work/app"}, {Path: "/data/ro", Real: "/elsewhere/ro", ViaLink: true}},
		WriteRoots: []Root{{Path: "/work/app/out", Real: "/elsewhere", ViaLink: true}},
		DenyNames:  DefaultDenyNames,
	}
	tests := []struct {
		name string
		t    Target
		want string
	}{
		{"write below the link", Target{Raw: "out/x", Path: "/work/app/out/x", Real: "/elsewhere/x", Access: tool.Write, ViaLink: true}, CodeSymlinkEscape},
		{"write below the link, not seen", Target{Raw: "out/x", Path: "/work/app/out/x", Real: "/work/app/out/x", Access: tool.Write}, CodeSymlinkEscape},
		{"write where it leads", Target{Raw: "/elsewhere/x", Path: "/elsewhere/x", Real: "/elsewhere/x", Access: tool.Write}, CodeOutsideRoots},
		{"read where it leads", Target{Raw: "/elsewhere/ro/x", Path: "/elsewhere/ro/x", Real: "/elsewhere/ro/x", Access: tool.Read}, CodeOutsideRoots},
		{"read below the read link", Target{Raw: "/data/ro/x", Path: "/data/ro/x", Real: "/elsewhere/ro/x", Access: tool.Read, ViaLink: true}, CodeSymlinkEscape},
		{"read below a real root", Target{Raw: "a", Path: "/work/app/a", Real: "/work/app/a", Access: tool.Read}, CodeAllowed},
		{"write below a real read root", Target{Raw: "a", Path: "/work/app/a", Real: "/work/app/a", Access: tool.Write}, CodeOutsideRoots},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Decide(r, tc.t)
			if o.Code != tc.want || o.Allowed != (tc.want == CodeAllowed) {
				t.Fatalf("Decide = %+v, want %s", o, tc.want)
			}
			if tc.want == CodeSymlinkEscape && !strings.Contains(o.Message, "symbolic link") {
				t.Errorf("message should say the root is a link: %q", o.Message)
			}
		})
	}
}

func TestDecideMessageNamesRoots(t *testing.T) {
	t.Parallel()
	o := Decide(rules(), Target{Raw: "/etc/passwd", Path: "/etc/passwd", Real: "/etc/passwd", Access: tool.Write})
	if !strings.Contains(o.Message, "/work/app") || !o.Retryable {
		t.Errorf("outcome = %+v", o)
	}
}

func TestMatchName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    string
		want bool
	}{
		{".env", true}, {"a/.env", true}, {`a\.env`, true}, {"a/.env.local", true}, {".envrc", false},
		{".git/hooks", true}, {"x/.git/hooks/y", true}, {"hooks", false},
		{".git/config", true}, {"x/.git/config", true}, {`.GIT\Config`, true}, {".git/configs", false}, {"config", false},
		{".git/modules", true}, {".git/modules/m/hooks/post-checkout", true}, {"src/modules", false}, {".git/HEAD", false},
		{"k.PEM", true}, {"pem", false}, {"id_rsa_backup", true},
	}
	for _, tc := range tests {
		if got := MatchName(DefaultDenyNames, tc.p); got != tc.want {
			t.Errorf("MatchName(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"a", "..", "../../x", `a\b`, "/abs", "a\x00b", "C:\\x", "", ".", "//x//y/", "日本"} {
		f.Add("/work/app", s)
	}
	f.Fuzz(func(t *testing.T, ws, raw string) {
		got, err := Normalize(ws, raw)
		if strings.ContainsRune(raw, 0) && err == nil {
			t.Fatalf("NUL accepted: %q", raw)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("error %v is not ErrInvalidPath", err)
			}
			return
		}
		if !path.IsAbs(got) || path.Clean(got) != got {
			t.Fatalf("Normalize(%q, %q) = %q: not absolute and clean", ws, raw, got)
		}
		// Backslashes in the model's path are separators; the workspace is taken as it is.
		if rest := strings.TrimPrefix(got, path.Clean(ws)); !strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, `\`) &&
			!strings.Contains(raw, "..") && strings.Contains(rest, `\`) {
			t.Fatalf("Normalize(%q, %q) = %q: a backslash survived", ws, raw, got)
		}
	})
}

// FuzzDecide builds a target from a raw path and an arbitrary place a link might have led
// it, and checks that nothing outside the roots is ever allowed.
func FuzzDecide(f *testing.F) {
	f.Add("a.txt", "", false, false, uint8(1))
	f.Add("../app-copy/x", "", false, true, uint8(1))
	f.Add("l", "/etc/passwd", true, false, uint8(1))
	f.Add("x/.env/../a", "", false, false, uint8(2))
	f.Add("a\x00", "", false, true, uint8(1))
	f.Add("/work/link/x", "/elsewhere/x", false, true, uint8(1))
	f.Add("/elsewhere/x", "", false, false, uint8(1))
	f.Fuzz(func(t *testing.T, raw, linkTo string, link, write bool, links uint8) {
		r := rules()
		// A root that is a symbolic link to /elsewhere admits nothing.
		r.WriteRoots = append(r.WriteRoots, Root{Path: "/work/link", Real: "/elsewhere", ViaLink: true})
		access := tool.Read
		if write {
			access = tool.Write
		}
		tg := Target{Raw: raw, Access: access, Link: link, ViaLink: link || linkTo != "", Links: int(links), Exists: true, Kind: KindFile}
		lex, err := Normalize("/work/app", raw)
		if err == nil {
			tg.Path = lex
		}
		tg.Real = tg.Path
		if linkTo != "" {
			if real, err := Normalize("/work/app", linkTo); err == nil {
				tg.Real = real
			} else {
				tg.Real = linkTo
			}
		}
		o := Decide(r, tg)
		if !o.Allowed {
			if o.Code == "" || o.Message == "" {
				t.Fatalf("denial without code or message: %+v", o)
			}
			return
		}
		if strings.ContainsRune(raw, 0) || strings.ContainsRune(tg.Real, 0) {
			t.Fatalf("NUL allowed: %q", raw)
		}
		roots := r.WriteRoots
		if !write {
			roots = append(roots, r.ReadRoots...)
		}
		in := func(p string) bool {
			for _, root := range roots {
				if !root.ViaLink && backend.Within(root.Real, p) {
					return true
				}
			}
			return false
		}
		if !in(tg.Real) || !in(tg.Path) {
			t.Fatalf("allowed outside the roots: %+v", tg)
		}
		if MatchName(r.DenyNames, raw) || MatchName(r.DenyNames, strings.TrimPrefix(tg.Real, "/work/app")) {
			t.Fatalf("allowed a denied name: %+v", tg)
		}
		if write && (link || links > 1) {
			t.Fatalf("allowed a write to a link: %+v", tg)
		}
	})
}
