package sandbox

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fakeFS is a tree of paths: directories end in "/", symlinks are "path -> target".
type fakeFS struct {
	dirs  map[string]bool
	files map[string]bool
	links map[string]string
}

func newFakeFS(entries ...string) *fakeFS {
	f := &fakeFS{dirs: map[string]bool{"/": true}, files: map[string]bool{}, links: map[string]string{}}
	for _, e := range entries {
		switch {
		case strings.Contains(e, " -> "):
			from, to, _ := strings.Cut(e, " -> ")
			f.links[from] = to
			f.mkParents(from)
		case strings.HasSuffix(e, "/"):
			f.dirs[strings.TrimSuffix(e, "/")] = true
			f.mkParents(strings.TrimSuffix(e, "/"))
		default:
			f.files[e] = true
			f.mkParents(e)
		}
	}
	return f
}

func (f *fakeFS) mkParents(p string) {
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		f.dirs[d] = true
	}
}

func (f *fakeFS) resolve(p string) (string, error) {
	if to, ok := f.links[p]; ok {
		return f.resolve(to)
	}
	if f.dirs[p] || f.files[p] {
		return p, nil
	}
	return "", errors.New("no such file")
}

func (f *fakeFS) lstat(p string) (bool, bool, error) {
	if _, ok := f.links[p]; ok {
		return false, true, nil
	}
	if f.dirs[p] {
		return true, false, nil
	}
	if f.files[p] {
		return false, false, nil
	}
	return false, false, errors.New("no such file")
}

func (f *fakeFS) list(p string) ([]dirEntry, error) {
	var names []string
	for _, m := range []map[string]bool{f.dirs, f.files} {
		for e := range m {
			if e != "/" && path.Dir(e) == p {
				names = append(names, path.Base(e))
			}
		}
	}
	for e := range f.links {
		if path.Dir(e) == p {
			names = append(names, path.Base(e))
		}
	}
	sort.Strings(names)
	out := make([]dirEntry, 0, len(names))
	for _, n := range names {
		dir, link, _ := f.lstat(path.Join(p, n))
		out = append(out, dirEntry{name: n, dir: dir, link: link})
	}
	return out, nil
}

func grantsOf(l layout) []string {
	var out []string
	for _, g := range l.Grants {
		kind := "ro"
		switch {
		case g.ListOnly:
			kind = "ls"
		case g.Write:
			kind = "rw"
		}
		out = append(out, kind+" "+g.Path)
	}
	sort.Strings(out)
	return out
}

func TestPlan(t *testing.T) {
	t.Parallel()
	fs := newFakeFS(
		"/ws/src/main.go", "/ws/airlock.toml", "/ws/.env", "/ws/sub/.env.local", "/ws/sub/ok",
		"/ws/link -> /home/u/.ssh", "/ws/.git/config",
		"/home/u/.ssh/id_rsa", "/home/u/go/pkg/", "/home/u/.cache/go-build/", "/home/u/.cache/airlock/helper",
		"/usr/bin/", "/etc/passwd", "/etc/shadow", "/etc/ssh/sshd_config", "/tmp/s/", "/dev/null",
		"/state/airlock/ws-1/receipts.jsonl",
	)
	hidden := func(rel string) bool { b := path.Base(rel); return b == ".env" || strings.HasPrefix(b, ".env.") }
	l := plan(Policy{
		ReadRoots: []string{"/ws"}, WriteRoots: []string{"/ws"}, TempDir: "/tmp/s", Home: "/home/u",
		SystemRead: []string{"/usr", "/etc"}, Protected: []string{"/ws/airlock.toml", "/state/airlock/ws-1"}, Hidden: hidden,
	}, fs)
	want := []string{
		"ls /etc", "ls /home/u/.cache", "ls /ws", "ls /ws/sub",
		"ro /etc/passwd", "ro /home/u/.cache/go-build", "ro /home/u/go", "ro /usr",
		"rw /dev/null", "rw /tmp/s", "rw /ws/.git", "rw /ws/src", "rw /ws/sub/ok",
	}
	if got := grantsOf(l); !slices.Equal(got, want) {
		t.Errorf("grants:\n got %q\nwant %q", got, want)
	}
	for _, p := range []string{"/ws/airlock.toml", "/ws/.env", "/ws/sub/.env.local", "/home/u/.ssh", "/etc/shadow", "/etc/ssh", "/home/u/.cache/airlock", "/state/airlock/ws-1"} {
		if !slices.Contains(l.Protected, p) {
			t.Errorf("%s not protected: %q", p, l.Protected)
		}
	}
	// The symlink to ~/.ssh in the workspace is not granted (that would grant its target).
	for _, g := range l.Grants {
		if g.Path == "/ws/link" || strings.HasPrefix(g.Path, "/home/u/.ssh") {
			t.Errorf("granted %s", g.Path)
		}
	}
}

func TestPlanRootInsideProtected(t *testing.T) {
	t.Parallel()
	fs := newFakeFS("/home/u/.ssh/keys/", "/ws/")
	l := plan(Policy{ReadRoots: []string{"/home/u/.ssh/keys"}, WriteRoots: []string{"/ws"}, Home: "/home/u", SystemRead: []string{}}, fs)
	if got := grantsOf(l); !slices.Equal(got, []string{"rw /ws"}) {
		t.Errorf("grants %q", got)
	}
	if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "/home/u/.ssh/keys is not granted") {
		t.Errorf("notes %q", l.Notes)
	}
}

func TestPlanScanLimit(t *testing.T) {
	t.Parallel()
	fs := newFakeFS("/ws/a", "/ws/b", "/ws/c", "/ws/d/.env")
	l := plan(Policy{WriteRoots: []string{"/ws"}, SystemRead: []string{}, Hidden: func(string) bool { return false }, ScanLimit: 2}, fs)
	if len(l.Notes) == 0 || !strings.Contains(l.Notes[0], "scan stopped after 2") || !l.ScanCut {
		t.Errorf("notes %q, scan cut %v", l.Notes, l.ScanCut)
	}
	// A whole scan leaves nothing unprotected.
	if l := plan(Policy{WriteRoots: []string{"/ws"}, SystemRead: []string{}, Hidden: func(string) bool { return false }}, fs); l.ScanCut {
		t.Errorf("scan of 5 entries cut: %q", l.Notes)
	}
}

func FuzzPlanNeverGrantsProtected(f *testing.F) {
	f.Add("/ws/a/b", "/ws/a")
	f.Add("/ws/x", "/ws")
	f.Fuzz(func(t *testing.T, file, prot string) {
		if !path.IsAbs(file) || !path.IsAbs(prot) || file == "/" || path.Clean(file) != file || path.Clean(prot) != prot || strings.ContainsAny(file+prot, "\x00 ") {
			return
		}
		fs := newFakeFS(file, "/ws/other")
		l := plan(Policy{ReadRoots: []string{"/"}, WriteRoots: []string{"/ws"}, SystemRead: []string{}, Protected: []string{prot}}, fs)
		if _, err := fs.resolve(prot); err != nil {
			return
		}
		for _, g := range l.Grants {
			if g.ListOnly {
				continue
			}
			// No full grant may be the protected path or above it.
			if g.Path == prot || g.Path == "/" || strings.HasPrefix(prot, g.Path+"/") {
				t.Fatalf("grant %+v covers protected %s", g, prot)
			}
		}
	})
}

// TestMemoViewResolvesAsEvalSymlinks: a plan's memoised resolve gives what
// filepath.EvalSymlinks gives, for paths through links to directories, a link to a file, a
// relative link, a dangling link, a missing path and a path beneath a file, each asked twice.
func TestMemoViewResolvesAsEvalSymlinks(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"real/sub", "other"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "real/sub/f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"abs": filepath.Join(d, "real"), "rel": "real/sub", "other/up": "../real", "tofile": "real/sub/f", "dangling": "nowhere",
	} {
		if err := os.Symlink(target, filepath.Join(d, link)); err != nil {
			t.Fatal(err)
		}
	}
	m := newMemoView()
	for round := 0; round < 2; round++ {
		for _, rel := range []string{"real/sub/f", "abs/sub/f", "rel/f", "other/up/sub", "other/up/sub/f", "tofile", "dangling", "dangling/x", "missing/x", "real/sub/f/x", "abs", "."} {
			p := filepath.Join(d, rel)
			want, wantErr := filepath.EvalSymlinks(p)
			got, err := m.resolve(p)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Errorf("round %d, %s: resolve %q, %v; EvalSymlinks %q, %v", round, rel, got, err, want, wantErr)
			}
		}
	}
}
