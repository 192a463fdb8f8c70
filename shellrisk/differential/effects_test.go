package differential

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/mount"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/shellrisk"
)

// The file-effects pass. TestDifferential checks which programs a shell started; this one
// checks what those programs did. Its container is the harness's other one: the same
// driver, the same throwaway user per run, the same limits (no network, no capability
// for the shell, read-only root, no-new-privileges), but the host's /usr mounted
// read-only in place of the recorders, so that /usr/bin/time, git, gawk, cp and the rest
// are the real programs and really write. Each run starts from a fresh copy of a scratch
// tree (probe/effects.go): the workspace (a git repository, the working directory), a
// directory beside it, and $HOME; the driver compares every writable place before and
// after the run. The property, for each command:
//
//   - a safe verdict has no file effect at all;
//   - a verdict of workspace writes only ([shellrisk.Verdict.OnlyWrites]: write,
//     irreversible) has no effect outside the workspace, and makes no symbolic link in
//     it that points out of it (a later write through it lands outside).
//
// A verdict that says more (network, exec, dangerous) asks a person, who is shown what
// runs; it is not checked here.

var (
	flagEffectsShow = flag.Bool("effects.show", false, "log every seed's verdict and effects in TestFileEffects, also when it passes")
	flagEffectsOnly = flag.String("effects.only", "", "run only the effect seeds whose command matches this regular expression")
)

// effect mirrors probe.Effect.
type effect struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Type   string `json:"type"`
	Target string `json:"target"`
	From   string `json:"from"`
}

func (e effect) String() string {
	s := e.Kind + " " + e.Type + " " + e.Path
	if e.From != "" {
		s += " from " + e.From
	}
	if e.Target != "" {
		s += " -> " + e.Target
	}
	return s
}

// startEffects starts the effects container: see the comment above.
func startEffects(t testing.TB) *sandbox {
	t.Helper()
	cli := dockertest.Client(t)
	// The image's /bin, /lib and /lib64 are links into /usr, so the host must be laid out
	// the same way (Debian 12 is) for its /usr to be whole.
	for _, d := range []string{"/bin", "/lib", "/lib64"} {
		if target, err := os.Readlink(d); err != nil || target != "usr"+d {
			missing(t, fmt.Sprintf("the effects pass mounts the host's /usr and needs %s -> usr%s (merged /usr)", d, d))
		}
	}
	for _, p := range []string{"/usr/bin/bash", "/usr/bin/dash", "/usr/bin/git"} {
		if _, err := os.Stat(p); err != nil {
			missing(t, fmt.Sprintf("the effects pass needs %s on the host (.ci/test installs it)", p))
		}
	}
	tarball, err := effectsRootfs(probeBuild.Path(t))
	if err != nil {
		t.Fatalf("effects image: %v", err)
	}
	return startContainer(t, cli, containerSpec{
		image:   importImage(t, cli, tarball),
		workers: 1,
		mode:    "effects",
		shells:  effectShellNames,
		// Read-only: nothing a run does reaches the host's programs. no-new-privileges (the
		// container's) keeps a set-user-ID program in it from gaining anything.
		mounts: []mount.Mount{{Type: mount.TypeBind, Source: "/usr", Target: "/usr", ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}},
		tmpfs: map[string]string{"/seed": "rw,nosuid,nodev,size=16m,mode=0755"},
	})
}

// effectsRootfs is the effects image: the driver, an /etc with the two users, and links
// into the /usr the test mounts.
func effectsRootfs(probe string) ([]byte, error) {
	b, err := os.ReadFile(probe)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	hdrs := []*tar.Header{}
	for _, d := range []string{"dev", "proc", "sys", "etc", "usr", ".probe", "seed"} {
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime})
	}
	for _, d := range []string{"tmp", "rec"} {
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o1777, ModTime: mtime})
	}
	for _, l := range []string{"bin", "sbin", "lib", "lib64"} {
		hdrs = append(hdrs, &tar.Header{Typeflag: tar.TypeSymlink, Name: l, Linkname: "usr/" + l, Mode: 0o777, ModTime: mtime})
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")},
		{".probe/driver", 0o755, b},
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: ".probe/idle", Linkname: ".probe/driver", Mode: 0o755, ModTime: mtime}); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// misread is one way a verdict got a run's effects wrong.
type misread struct {
	Verdict shellrisk.Verdict
	Shell   string
	Why     string
	Effects []effect
}

// judgeEffects checks one shell's run of a command against the verdict.
func judgeEffects(v shellrisk.Verdict, r result) *misread {
	if r.Error != "" || len(r.Effects) == 0 {
		return nil
	}
	if v.Risk == shellrisk.RiskSafe && !v.FailedClosed() {
		return &misread{Verdict: v, Shell: r.Shell, Why: "safe, but changed files", Effects: r.Effects}
	}
	if !v.OnlyWrites() {
		return nil
	}
	var out []effect
	for _, e := range r.Effects {
		if !inside(r.Dir, e.Path) || e.Type == "symlink" && e.Kind != "removed" && !inside(r.Dir, linkTarget(e)) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &misread{Verdict: v, Shell: r.Shell, Why: v.Risk.String() + " (workspace only), but changed files outside the workspace", Effects: out}
}

// inside reports whether p is the workspace ws or under it.
func inside(ws, p string) bool {
	return p == ws || strings.HasPrefix(p, ws+"/")
}

// linkTarget is where a symbolic link points, as an absolute path.
func linkTarget(e effect) string {
	if path.IsAbs(e.Target) {
		return path.Clean(e.Target)
	}
	return path.Join(path.Dir(e.Path), e.Target)
}

// effectSeeds are the commands of the effects pass: the hand-written families and one
// command per output-file option read from the programs' own help (see options_test.go).
func effectSeeds(t testing.TB) []input {
	t.Helper()
	all := append(loadLines(t, filepath.Join("testdata", "effects_seeds.txt"), false), optionSeeds(t)...)
	var out []input
	seen := map[string]bool{}
	for _, in := range all {
		if seen[in.Cmd] || *flagEffectsOnly != "" && !matchOnly(*flagEffectsOnly, in.Cmd) {
			continue
		}
		seen[in.Cmd] = true
		out = append(out, in)
	}
	return out
}

func matchOnly(expr, s string) bool {
	ok, err := regexp.MatchString(expr, s)
	return err == nil && ok
}

// TestFileEffects runs every effect seed with real programs and fails on each verdict that
// misreads what the run did to files, except for the commands in
// testdata/known_misreads.txt, which must still misread: an entry that no longer does
// fails too, so the list only shrinks.
func TestFileEffects(t *testing.T) {
	seeds := effectSeeds(t)
	known := knownMisreads(t)
	s := startEffects(t)
	cmds := make([][]byte, len(seeds))
	shells := make([][]string, len(seeds))
	for i, in := range seeds {
		cmds[i], shells[i] = []byte(in.Cmd), effectShellsFor(in.Cmd)
	}
	res, err := s.RunOn(cmds, shells)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var misreads []string
	effects, runs := 0, 0
	for i, in := range seeds {
		var found []*misread
		for _, r := range res[i] {
			if r.Shell == "" {
				continue
			}
			runs++
			if r.Error != "" {
				t.Errorf("%s: driver under %s: %s", in.From, r.Shell, r.Error)
			}
			effects += len(r.Effects)
			v := shellrisk.ClassifyIn(shellrisk.Context{Workspace: r.Dir}, in.Cmd)
			if *flagEffectsShow {
				t.Logf("%s %s\n  %s: verdict %s %v, exit %d, timed out %v, effects %v, stderr %q", in.From, strconv.Quote(in.Cmd), r.Shell, v.Risk, v.Codes(), r.Exit, r.TimedOut, r.Effects, r.Stderr)
			}
			if m := judgeEffects(v, r); m != nil {
				found = append(found, m)
			}
		}
		switch {
		case len(found) > 0 && known[in.Cmd]:
			misreads = append(misreads, in.Cmd)
		case len(found) > 0:
			misreads = append(misreads, in.Cmd)
			t.Errorf("%s: misread file effects\n%s", in.From, misreadReport(in.Cmd, found))
		case known[in.Cmd]:
			t.Errorf("%s: %s is in testdata/known_misreads.txt but no longer misreads: take it out", in.From, strconv.Quote(in.Cmd))
		}
		delete(known, in.Cmd)
	}
	for cmd := range known {
		if *flagEffectsOnly == "" {
			t.Errorf("testdata/known_misreads.txt: %s is not an effect seed: take it out", strconv.Quote(cmd))
		}
	}
	t.Logf("%d seeds, %d runs: %d file effects recorded, %d seeds misread (%d of them known)", len(seeds), runs, effects, len(misreads), len(misreads)-countNew(misreads, knownMisreads(t)))
	if *flagEffectsShow || t.Failed() {
		var b strings.Builder
		for _, c := range misreads {
			b.WriteString(quoteSeed(c) + "\n")
		}
		t.Logf("misread now (the known_misreads.txt format):\n%s", b.String())
	}
}

// effectShellNames are the shells of the effects mode, in the driver's order.
var effectShellNames = []string{"bash", "dash"}

// bothShells are the words that bash reads as its own and dash as a program: a command
// that holds one runs under both; every other one only under dash, /bin/sh on Debian,
// since what a program does to files does not depend on the shell that started it (which
// programs a shell starts is TestDifferential's concern, under all four).
var bothShells = regexp.MustCompile(`(^|[^-\w/.])time\b`)

func effectShellsFor(cmd string) []string {
	if bothShells.MatchString(cmd) {
		return nil
	}
	return []string{"dash"}
}

func countNew(misreads []string, known map[string]bool) int {
	n := 0
	for _, c := range misreads {
		if !known[c] {
			n++
		}
	}
	return n
}

func misreadReport(cmd string, ms []*misread) string {
	var b strings.Builder
	v := ms[0].Verdict
	fmt.Fprintf(&b, "  command %s\n  verdict %s %v", strconv.Quote(cmd), v.Risk, v.Codes())
	for _, m := range ms {
		fmt.Fprintf(&b, "\n  %s: %s:", m.Shell, m.Why)
		for _, e := range m.Effects {
			fmt.Fprintf(&b, "\n    %s", e)
		}
	}
	return b.String()
}

// quoteSeed writes a command as a line of a seeds file.
func quoteSeed(c string) string {
	if strings.ContainsFunc(c, func(r rune) bool { return r < ' ' || r == 0x7f }) || strings.HasPrefix(c, "#") || strings.HasPrefix(c, "go:") {
		return "go:" + strconv.Quote(c)
	}
	return c
}

// knownMisreads reads the entries of testdata/known_misreads.txt for TestFileEffects: the
// seeds that misread on the classifier of the day, one per line in the seeds format. The
// "spelling: COMMAND" entries are getopt's TestOptionSpellings'.
func knownMisreads(t testing.TB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, in := range loadLines(t, filepath.Join("testdata", "known_misreads.txt"), false) {
		if !strings.HasPrefix(in.Cmd, "spelling: ") {
			out[in.Cmd] = true
		}
	}
	return out
}
