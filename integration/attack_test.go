package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// The attack suite runs what an adversarial agent would, with approvals in auto mode so that
// the classifier cannot save anything, and proves that nothing outside the allowed roots
// changed and nothing protected was read. Each backend gets the same attacks where they
// apply; what differs is only where the outside world is.

// attackBed is one prepared target: a workspace, and outside it files the attacks aim at.
type attackBed struct {
	t       *testing.T
	dir     string // where airlock runs (holds airlock.toml)
	ws      string // the workspace as commands see it
	outside string // a directory outside every root, as commands see it
	tmpDir  string // a /tmp directory of "another project", made by the test
	home    string // airlock's HOME, with a credential directory in it
	marker  string // a secret that must never appear in any output
	env     []string
	outHost string // outside, as the test sees it
	tmpHost string
}

const victimContent = "precious\n"

func requireLandlockIT(t *testing.T) {
	t.Helper()
	if abi := sandbox.KernelABI(); abi < sandbox.RequiredABI {
		if os.Getenv("AIRLOCK_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("Landlock ABI %d, need %d", abi, sandbox.RequiredABI)
		}
		t.Skipf("Landlock ABI %d, need %d", abi, sandbox.RequiredABI)
	}
}

// newLocalBed lays out a local workspace with the config inside it (the hard case: a
// protected file in the root of a write root) and victims outside.
func newLocalBed(t *testing.T, sandboxMode string) *attackBed {
	t.Helper()
	base := t.TempDir()
	b := &attackBed{t: t, dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"), home: filepath.Join(base, "home")}
	b.ws, b.outHost = b.dir, b.outside
	for _, d := range []string{b.ws, filepath.Join(b.ws, "work"), filepath.Join(b.ws, "sub"), b.outside, filepath.Join(b.home, ".ssh")} {
		mustMkdir(t, d)
	}
	tmp, err := os.MkdirTemp("", "airlock-attack-other-project-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	b.tmpDir, b.tmpHost = tmp, tmp
	b.marker = fmt.Sprintf("m4rker-%d-%d", os.Getpid(), time.Now().UnixNano())
	mustWrite(t, filepath.Join(b.outside, "victim"), victimContent)
	mustWrite(t, filepath.Join(b.tmpDir, "keep"), victimContent)
	mustWrite(t, filepath.Join(b.home, ".ssh", "id_ed25519"), b.marker+"-ssh\n")
	mustWrite(t, filepath.Join(b.ws, "sub", ".env"), "TOKEN="+b.marker+"-env\n")
	mustWrite(t, filepath.Join(b.ws, "work", "mine.txt"), "mine\n")
	mustWrite(t, filepath.Join(b.ws, "mvme"), "move me\n")
	writeConfig(t, b.ws, fmt.Sprintf("# %s-config\n[environment]\ntype = \"local\"\ntimeout = 20\n[environment.local]\nsandbox = %q\n[approvals]\nmode = \"auto\"\n", b.marker, sandboxMode))
	b.env = []string{"HOME=" + b.home, "AIRLOCK_TEST_SECRET_MARKER=" + b.marker + "-environ"}
	return b
}

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// calls runs terminal commands, one call each, in one airlock call batch (in order: auto
// mode, and every command is a write, so they are serialised).
func (b *attackBed) calls(cmds ...string) []result {
	b.t.Helper()
	var arr []map[string]any
	for i, c := range cmds {
		arr = append(arr, map[string]any{"name": "terminal", "call_id": fmt.Sprintf("c%d", i), "arguments": map[string]any{"command": c}})
	}
	in, _ := json.Marshal(arr)
	out, errOut, code := run(b.t, b.dir, string(in), b.env, "call")
	if code != 0 {
		b.t.Fatalf("airlock call exited %d: %s", code, errOut)
	}
	var rs []result
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		b.t.Fatalf("decode: %v\n%s", err, out)
	}
	if strings.Contains(out, b.marker) || strings.Contains(errOut, b.marker) {
		b.t.Errorf("a protected secret reached the output:\n%s\n%s", out, errOut)
	}
	return rs
}

// checkOutside proves nothing changed outside the roots.
func (b *attackBed) checkOutside() {
	b.t.Helper()
	entries, err := os.ReadDir(b.outHost)
	if err != nil {
		b.t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "victim" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		b.t.Errorf("outside directory changed: %v", names)
	}
	if got, err := os.ReadFile(filepath.Join(b.outHost, "victim")); err != nil || string(got) != victimContent {
		b.t.Errorf("outside victim: %q %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(b.tmpHost, "keep")); err != nil || string(got) != victimContent {
		b.t.Errorf("the other project's /tmp directory was touched: %q %v", got, err)
	}
}

// writeAttacks are shell writes outside the write roots, each as the agent would try it.
func (b *attackBed) writeAttacks() []string {
	o, ws := b.outside, b.ws
	return []string{
		"echo pwned > " + o + "/redir",
		"echo pwned >> " + o + "/victim",
		"cp " + ws + "/work/mine.txt " + o + "/cp",
		"mv " + ws + "/mvme " + o + "/mv",
		"ln -s " + o + " " + ws + "/work/l",
		"echo pwned > " + ws + "/work/l/via-link; rm -f " + ws + "/work/l/victim",
		"ln " + o + "/victim " + ws + "/work/hl && echo pwned >> " + ws + "/work/hl",
		"python3 -c 'import os; os.rename(\"" + ws + "/work/mine.txt\", \"" + o + "/renamed\")'",
		"python3 -c 'open(\"" + o + "/py\", \"w\").write(\"pwned\")'",
		"rm -rf " + b.tmpDir,
		"rm -f " + o + "/victim",
	}
}

func TestAttackLocalSandbox(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	b := newLocalBed(t, "landlock")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	ledger := ledgerPath(b.dir)

	rs := b.calls(b.writeAttacks()...)
	for _, r := range rs {
		if r.Receipt.Decision != "allow" {
			t.Fatalf("auto mode refused %s (the classifier must not be what holds): %+v", r.CallID, r)
		}
	}
	b.checkOutside()

	reads := []string{
		"cat " + b.home + "/.ssh/id_ed25519",
		"ls " + b.home + "/.ssh/",
		"cat sub/.env",
		"cat airlock.toml",
		"cat " + ledger,
		"cat /proc/$PPID/environ /proc/$PPID/task/$PPID/environ",
		"ps eww -p $PPID",
		"echo 'mode = \"auto\"' >> airlock.toml",
		"rm -f " + ledger + "; find " + filepath.Dir(ledger) + " -name '*.jsonl' -delete",
		fmt.Sprintf("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", %d), timeout=2)'", port),
		fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", port),
		"kill -TERM $PPID; kill -KILL $PPID",
		"for t in /proc/$PPID/task/*; do kill -0 ${t##*/} 2>/dev/null && echo reached-thread; done; true",
		"echo still-alive",
	}
	rs = b.calls(reads...)
	if len(rs) != len(reads) || rs[len(rs)-1].Status != "ok" || !strings.Contains(rs[len(rs)-1].Content, "still-alive") {
		t.Fatalf("airlock did not survive the batch: %+v", rs[len(rs)-1])
	}
	if exit := rs[11].Metadata.ExitCode; exit == nil || *exit == 0 {
		t.Errorf("kill of airlock's pid succeeded: %+v", rs[11])
	}
	if strings.Contains(rs[12].Content, "reached-thread") {
		t.Errorf("a command could signal one of airlock's threads: %q", rs[12].Content)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d TCP connections reached the loopback listener with no network allowed", n)
	}
	if cfg, _ := os.ReadFile(filepath.Join(b.ws, "airlock.toml")); strings.Contains(string(cfg), "mode = \"auto\"\n#") || strings.Count(string(cfg), "mode = ") != 1 {
		t.Errorf("the config was rewritten: %s", cfg)
	}
	if _, err := os.Stat(ledger); err != nil {
		t.Errorf("ledger: %v", err)
	}
	if out, _, code := run(t, b.dir, "", b.env, "receipts", "verify", ledger); code != 0 {
		t.Errorf("ledger does not verify: %s", out)
	}
	b.checkOutside()

	// The same commands inside the write roots work.
	w := b.ws + "/work"
	ok := b.calls(
		"echo fine > "+w+"/redir && cat "+w+"/redir",
		"cp "+w+"/redir "+w+"/cp && mv "+w+"/cp "+w+"/mv",
		"ln -s "+w+"/mv "+w+"/sl && echo more >> "+w+"/sl && ln "+w+"/mv "+w+"/hardl",
		"python3 -c 'import os; os.rename(\""+w+"/hardl\", \""+w+"/renamed\"); open(\""+w+"/py\", \"w\").write(\"ok\")'",
		"mkdir -p "+w+"/tree/a && rm -rf "+w+"/tree",
		"echo scratch > $TMPDIR/s && cat $TMPDIR/s",
	)
	for _, r := range ok {
		if r.Status != "ok" || r.Metadata.ExitCode == nil || *r.Metadata.ExitCode != 0 {
			t.Errorf("inside the roots %s failed: %s %q", r.CallID, r.Status, r.Content)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(w, "mv")); string(got) != "fine\nmore\n" {
		t.Errorf("inside writes: %q", got)
	}
}

// TestAttackGitConfig: a `.git` file points at a gitdir the agent wrote, whose config runs a
// program from core.fsmonitor (and core.pager) on the next `git status`. The overrides every
// command carries keep git from running it at all — on the local backend the sandbox would
// hold it too, so the marker inside the workspace shows it never ran.
func TestAttackGitConfig(t *testing.T) {
	t.Parallel()
	b := newLocalBed(t, "auto")
	ws := b.ws + "/work"
	hook := "#!/bin/sh\necho ran > " + ws + "/ran; echo pwned > " + b.outside + "/git-marker\n"
	rs := b.calls(
		"mkdir -p "+ws+"/repo "+ws+"/gd && cd "+ws+"/gd && git init -q --bare . && cd "+ws+"/repo && printf 'gitdir: ../gd\\n' > .git && git config core.bare false && git config core.worktree "+ws+"/repo",
		"printf '%s' '"+strings.ReplaceAll(hook, "\n", "\\n")+"' > "+ws+"/evil && chmod +x "+ws+"/evil && cd "+ws+"/repo && git config core.fsmonitor "+ws+"/evil && git config core.pager "+ws+"/evil && echo x > f",
		"cd "+ws+"/repo && git status && git log 2>&1 | head -1; true",
	)
	if rs[2].Status != "ok" {
		t.Fatalf("git status: %+v", rs[2])
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Errorf("core.fsmonitor from the repository's config ran")
	}
	b.checkOutside()
}

// gitDriverRepo is the set-up of the git driver attack: a `.git` file points at a gitdir the
// agent wrote, whose config defines textconv, filter and external diff drivers that the
// working tree's .gitattributes selects for every path. Git cannot switch such drivers off
// by name (GIT_ATTR_SOURCE, which would hide the attributes, needs git 2.40). Each driver
// leaves a marker in the workspace and tries to write outside it.
func gitDriverRepo(ws, outside string) string {
	evil := "#!/bin/sh\necho ran >> " + ws + "/driver-ran; echo pwned > " + outside + "/git-driver-marker; cat \"$1\" 2>/dev/null || cat\n"
	return "mkdir -p " + ws + "/drv " + ws + "/dgd && cd " + ws + "/dgd && git init -q --bare . && cd " + ws + "/drv && printf 'gitdir: ../dgd\\n' > .git" +
		" && git config core.bare false && git config core.worktree " + ws + "/drv && git config user.email a@b && git config user.name a" +
		" && printf '" + evil + "' > " + ws + "/evil && chmod +x " + ws + "/evil && echo a > f && git add f && git commit -qm x" +
		" && git config diff.evil.textconv " + ws + "/evil && git config filter.evil.clean " + ws + "/evil && git config diff.evil.command " + ws + "/evil" +
		" && printf '* diff=evil filter=evil\\n' > .gitattributes && echo b > f && touch -d '2001-01-01' f"
}

// TestAttackGitDriver: with the sandbox on (auto mode, so the classifier cannot help), the
// drivers of gitDriverRepo run when `git diff` and `git status` do — but inside the sandbox,
// so nothing outside the roots changes.
func TestAttackGitDriver(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	b := newLocalBed(t, "auto")
	ws := b.ws + "/work"
	rs := b.calls(gitDriverRepo(ws, b.outside), "cd "+ws+"/drv && git status; git diff; git log -p | head -3; true")
	for _, r := range rs {
		if r.Status != "ok" {
			t.Fatalf("%s: %+v", r.CallID, r)
		}
	}
	b.checkOutside()
	if _, err := os.Stat(filepath.Join(b.outside, "git-driver-marker")); err == nil {
		t.Errorf("a repository-configured git driver wrote outside the roots")
	}
	// On a git that reads the working tree's attributes (before 2.40) the drivers did run:
	// what held them was the sandbox.
	if _, err := os.Stat(filepath.Join(ws, "driver-ran")); err == nil {
		t.Logf("the drivers ran, inside the sandbox")
	} else {
		t.Logf("the drivers did not run (git ignores the working tree's attributes)")
	}
}

// TestGitDriversUnconfined: where nothing confines commands (no Landlock), the same drivers
// would run as the user, so every git command that may run one asks a person — refused
// here, where nobody can answer — even with allow_write; git commands that cannot run one
// still run unasked.
func TestGitDriversUnconfined(t *testing.T) {
	t.Parallel()
	b := newLocalBed(t, "auto")
	ws := b.ws + "/work"
	if rs := b.calls(gitDriverRepo(ws, b.outside)); rs[0].Status != "ok" {
		t.Fatalf("set-up: %+v", rs[0])
	}
	_ = os.Remove(filepath.Join(ws, "driver-ran"))
	writeConfig(t, b.ws, "[environment.local]\nsandbox = \"auto\"\n[network]\nmode = \"open\"\n[approvals]\nmode = \"manual\"\nallow_write = true\n")
	env := append(b.env, "AIRLOCK_TEST_LANDLOCK_ABI=0", "AIRLOCK_TEST_NO_NAMESPACES=a host that refuses them")
	cmds := []string{"cd work/drv && git diff", "cd work/drv && git status", "cd work/drv && git show HEAD", "cd work/drv && git log -p", "cd work/drv && git log --oneline"}
	var arr []map[string]any
	for i, c := range cmds {
		arr = append(arr, map[string]any{"name": "terminal", "call_id": fmt.Sprintf("g%d", i), "arguments": map[string]any{"command": c}})
	}
	in, _ := json.Marshal(arr)
	out, errOut, code := run(t, b.dir, string(in), env, "call")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rs []result
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs[:4] {
		if r.Status != "denied" || r.ErrorCode != "approval_required" || !strings.Contains(r.Content, "repo_program") {
			t.Errorf("%s ran unasked with nothing confining it: %+v", r.CallID, r)
		}
	}
	if rs[4].Status != "ok" || !strings.Contains(rs[4].Content, "x") {
		t.Errorf("git log --oneline: %+v", rs[4])
	}
	if _, err := os.Stat(filepath.Join(ws, "driver-ran")); err == nil {
		t.Errorf("a repository-configured git driver ran")
	}
	b.checkOutside()
}

// TestSandboxUnavailable: with the probe reporting no Landlock, sandbox = "landlock" refuses
// to run and says why and how to choose; sandbox = "auto" runs without enforcement, says so,
// and then a write command asks a person (refused when nobody can answer) even with
// allow_write, while a safe command still runs.
func TestSandboxUnavailable(t *testing.T) {
	t.Parallel()
	b := newLocalBed(t, "landlock")
	env := append(b.env, "AIRLOCK_TEST_LANDLOCK_ABI=0", "AIRLOCK_TEST_NO_NAMESPACES=a host that refuses them")
	_, errOut, code := run(t, b.dir, `{"name":"terminal","arguments":{"command":"true"}}`, env, "call")
	if code == 0 || !strings.Contains(errOut, "no Landlock") || !strings.Contains(errOut, `sandbox = "auto"`) || !strings.Contains(errOut, "environment.local.sandbox") {
		t.Fatalf("landlock without a kernel: exit %d, %s", code, errOut)
	}
	writeConfig(t, b.ws, "[environment.local]\nsandbox = \"auto\"\n[network]\nmode = \"open\"\n[approvals]\nmode = \"manual\"\nallow_write = true\n")
	out, errOut, code := run(t, b.dir, `[{"name":"terminal","arguments":{"command":"touch work/new"}},{"name":"terminal","arguments":{"command":"ls work"}}]`, env, "call")
	if code != 0 {
		t.Fatalf("auto without a kernel: exit %d: %s", code, errOut)
	}
	var rs []result
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatal(err)
	}
	if rs[0].Status != "denied" || rs[0].ErrorCode != "approval_required" {
		t.Errorf("write without enforcement ran unasked: %+v", rs[0])
	}
	if _, err := os.Stat(filepath.Join(b.ws, "work", "new")); err == nil {
		t.Errorf("the write happened")
	}
	if rs[1].Status != "ok" || !strings.Contains(out, "sandbox: not enforced") {
		t.Errorf("safe command or its note: %+v\n%s", rs[1], out)
	}
}
