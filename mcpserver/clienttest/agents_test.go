package clienttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/clientprobe"
	"github.com/airlock-dev/airlock/receipt"
)

// A step of a scripted session: the model calls tool with args, and check judges what the
// client sent back for it, as the model would read it. A nil check accepts anything.
type step struct {
	name  string
	tool  string // Airlock's tool name, or a client's own tool when own is set
	own   bool
	args  any // or func() any, called when the step is sent
	check func(r clientprobe.Result) error
	// then runs after check passes, before the next step is given (a person answering).
	then func(r clientprobe.Result) error
}

// session runs steps through a real client: the client (Claude Code or Codex) sends each
// tool result back in its next model request, where the script checks it.
type session struct {
	t      *testing.T
	steps  []step
	naming func(tool string) (name, namespace string)

	// started, when set, says whether the first request's tools show the client ready; if
	// not, the session ends at once with notStarted set.
	started    func(tools []string) bool
	notStarted bool

	mu     sync.Mutex
	failed []string
	passed []string
	tools  []string
}

func (s *session) script(req clientprobe.Request) clientprobe.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools == nil {
		s.tools = req.Tools
		if s.started != nil && !s.started(req.Tools) {
			s.notStarted = true
			return clientprobe.Reply{Text: "the airlock tools are not there yet"}
		}
	}
	n := len(req.Calls)
	if n > 0 && n <= len(s.steps) && len(s.passed)+len(s.failed) < n {
		st := s.steps[n-1]
		r, ok := resultFor(req, req.Calls[n-1].ID)
		var err error
		switch {
		case !ok:
			err = fmt.Errorf("no result came back for call %s", req.Calls[n-1].ID)
		case st.check != nil:
			err = st.check(r)
		}
		if err == nil && st.then != nil {
			err = st.then(r)
		}
		if err != nil {
			s.failed = append(s.failed, fmt.Sprintf("%s: %v\n--- what the model read:\n%s", st.name, err, r.Text))
			return clientprobe.Reply{Text: "stopping: a step failed"}
		}
		s.passed = append(s.passed, st.name)
	}
	if n >= len(s.steps) {
		return clientprobe.Reply{Text: "all steps done"}
	}
	st := s.steps[n]
	name, ns := st.tool, ""
	if !st.own {
		name, ns = s.naming(st.tool)
	}
	args := st.args
	if f, ok := args.(func() any); ok {
		args = f() // arguments that depend on an earlier result
	}
	return clientprobe.Reply{Tool: name, Namespace: ns, Args: args}
}

func resultFor(req clientprobe.Request, id string) (clientprobe.Result, bool) {
	for _, r := range req.Results {
		if r.CallID == id {
			return r, true
		}
	}
	return clientprobe.Result{}, false
}

// report fails t unless every step passed.
func (s *session) report(t *testing.T, out string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.failed {
		t.Errorf("step %s", f)
	}
	if len(s.passed) != len(s.steps) && len(s.failed) == 0 {
		t.Errorf("passed %d of %d steps (%v); client output:\n%s", len(s.passed), len(s.steps), s.passed, out)
	}
}

func contains(sub string) func(clientprobe.Result) error {
	return func(r clientprobe.Result) error {
		if r.IsError || !strings.Contains(r.Text, sub) {
			return fmt.Errorf("want a result holding %q", sub)
		}
		return nil
	}
}

var (
	approvalIDRe = regexp.MustCompile(`approval (\S+?)\)`)
	jobIDRe      = regexp.MustCompile(`started background job (\S+)`)
)

// agentSteps is one working session: a command's output, a write, a patch and a read, a
// refusal, the client's own shell refused, an approval answered from another process, and a
// background job read twice.
func agentSteps(t *testing.T, p project, ownShell string, ownShellArgs any, ownShellMarker string) []step {
	var approval, job string
	var firstOut string
	lines := ""
	for i := range 30 {
		lines += fmt.Sprintf("line %d\n", i)
	}
	return []step{
		{name: "command output", tool: "terminal", args: map[string]any{"command": "echo marker-$((6*7))"}, check: contains("marker-42")},
		{name: "write", tool: "write_file", args: map[string]any{"path": "notes.txt", "content": "alpha\nbeta\n"}, check: contains("notes.txt")},
		{name: "patch", tool: "patch", args: map[string]any{"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}, check: contains("+gamma")},
		{name: "read", tool: "read_file", args: map[string]any{"path": "notes.txt"}, check: func(r clientprobe.Result) error {
			if r.IsError || !strings.Contains(r.Text, "alpha") || !strings.Contains(r.Text, "gamma") || strings.Contains(r.Text, "beta") {
				return fmt.Errorf("want the patched file's text")
			}
			return nil
		}},
		{name: "refused", tool: "terminal", args: map[string]any{"command": "rm -rf /"}, check: func(r clientprobe.Result) error {
			// Codex passes no error flag to its model: the text says it.
			if !strings.HasPrefix(r.Text, "denied (hard_deny)") && !strings.Contains(r.Text, "Output:denied (hard_deny)") {
				return fmt.Errorf("want a refusal naming hard_deny")
			}
			return nil
		}},
		{name: "client's own shell", tool: ownShell, own: true, args: ownShellArgs, check: func(r clientprobe.Result) error {
			if _, err := os.Stat(filepath.Join(p.ws, ownShellMarker)); err == nil {
				return fmt.Errorf("the client's own shell ran: %s exists", ownShellMarker)
			}
			return nil
		}},
		{name: "approval pending", tool: "terminal",
			args: map[string]any{"command": "curl -s -m 2 http://127.0.0.1:9/ ; echo approved-$((2*21))"},
			check: func(r clientprobe.Result) error {
				m := approvalIDRe.FindStringSubmatch(r.Text)
				if !strings.Contains(r.Text, "approval_pending") || m == nil {
					return fmt.Errorf("want approval_pending with an approval id")
				}
				approval = m[1]
				return nil
			},
			then: func(clientprobe.Result) error {
				// A person answers from another terminal while the agent waits.
				out, err := p.airlock(t, "approvals", "approve", approval)
				if err != nil {
					return fmt.Errorf("airlock approvals approve: %v\n%s", err, out)
				}
				return nil
			}},
		{name: "approval_wait", tool: "approval_wait", args: func() any { return map[string]any{"approval_id": approval, "timeout": 30} },
			check: contains("approved-42")},
		{name: "job started", tool: "terminal",
			args: map[string]any{"background": true, "command": "i=0; while [ $i -lt 30 ]; do echo line $i; i=$((i+1)); sleep 0.02; done"},
			check: func(r clientprobe.Result) error {
				m := jobIDRe.FindStringSubmatch(r.Text)
				if m == nil {
					return fmt.Errorf("want a job id")
				}
				job = m[1]
				return nil
			}},
		{name: "job output", tool: "job_output", args: func() any { return map[string]any{"job_id": job} }, check: func(r clientprobe.Result) error { firstOut = r.Text; return nil }},
		{name: "job wait", tool: "job_wait", args: func() any { return map[string]any{"job_id": job, "timeout": 20} }, check: func(r clientprobe.Result) error {
			if got := jobLines(firstOut) + jobLines(r.Text); got != lines {
				return fmt.Errorf("job output read twice: got %q, want lines 0..29 once each", got)
			}
			return nil
		}},
	}
}

// jobLines keeps a job tool's output lines, without its [job …] status lines and the
// "Output:" Codex puts before a result's text.
func jobLines(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimPrefix(l, "Output:")
		if strings.HasPrefix(l, "line ") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// clientsConfig is the project config the agents run with: manual approvals, writes in the
// workspace unasked, no network.
const clientsConfig = `[approvals]
mode = "manual"
allow_write = true
`

func clientEnv(home, modelURL string) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "CLAUDE") ||
			strings.HasPrefix(k, "CODEX") || k == "HOME" || k == "AIRLOCK_CONFIG" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "CODEX_HOME="+filepath.Join(home, ".codex"),
		"ANTHROPIC_BASE_URL="+modelURL, "ANTHROPIC_API_KEY=scripted-model-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"AIRLOCK_SCRIPTED_MODEL_KEY=scripted-model-key")
}

func runClient(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s: %v", filepath.Base(name), err)
	}
	return string(out)
}

// checkLedger verifies the chain and that the receipts carry the client's call ids.
func checkLedger(t *testing.T, p project, s *session, calls []clientprobe.Call, client string) {
	t.Helper()
	if out, err := p.airlock(t, "receipts", "verify", filepath.Join(p.dir, "state", "receipts.jsonl")); err != nil {
		t.Fatalf("receipts verify: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(p.dir, "state", "receipts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := receipt.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ln := range lines {
		if r := ln.Receipt; r != nil && r.Client != nil {
			if !strings.Contains(strings.ToLower(r.Client.Name), client) {
				t.Errorf("receipt %s names client %q", r.CallID, r.Client.Name)
			}
			seen[r.Client.CallID] = true
		}
	}
	n := 0
	for i, c := range calls {
		if i < len(s.steps) && !s.steps[i].own {
			n++
			if !seen[c.ID] {
				t.Errorf("no receipt carries the client's call id %s (%s)", c.ID, c.Name)
			}
		}
	}
	if n == 0 {
		t.Error("no Airlock tool call seen")
	}
}

// ownTools are the clients' own shell, file and fetch tools, which must be absent or refused.
var ownTools = []string{"Bash", "Edit", "Write", "MultiEdit", "NotebookEdit", "Read", "Grep", "Glob", "WebFetch", "WebSearch",
	"shell", "exec_command", "apply_patch", "view_image", "web_search", "local_shell"}

func offered(tools []string, name string) bool {
	return slices.ContainsFunc(tools, func(t string) bool { return t == name || strings.HasSuffix(t, "."+name) })
}

// The real Claude Code, plugged in by `airlock install claude-code` as written, run headless
// against the scripted model: the model reads every result, the client's own tools are off,
// and the ledger joins the client's call ids.
func TestClaudeCodeSession(t *testing.T) {
	t.Parallel()
	claude := clientBin(t, "claude")
	for _, scope := range []string{"--user", "--project"} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, clientsConfig)
			home := t.TempDir()
			if scope == "--project" {
				// The README's way to trust a folder for Claude Code.
				trustClaudeFolder(t, home, p.ws)
			}
			runIn(t, p.ws, home, airlockBin, "install", "claude-code", scope, "--config", p.config, "--client-bin", claude)
			// --check runs the client as the user would and says what it will do.
			check := runIn(t, p.ws, home, airlockBin, "install", "claude-code", scope, "--config", p.config, "--client-bin", claude, "--check")
			if strings.Contains(check, "FAIL") || !strings.Contains(check, "airlock tools offered to the model: ") {
				t.Errorf("install --check:\n%s", check)
			}
			// Claude Code -p may send its first request before its MCP servers are connected
			// (seen on a loaded machine): the model is then offered no airlock tool. That run
			// is the client's start-up race, not a result; it is run again, at most twice.
			var s *session
			var srv *clientprobe.Server
			var out string
			for attempt := 1; ; attempt++ {
				s = &session{t: t, naming: func(tool string) (string, string) { return "mcp__airlock__" + tool, "" }}
				s.steps = agentSteps(t, p, "Bash", map[string]any{"command": "touch own-shell-marker", "description": "x"}, "own-shell-marker")
				if s.started = func(tools []string) bool { return offered(tools, "mcp__airlock__terminal") }; attempt == 3 {
					s.started = nil
				}
				var err error
				if srv, err = clientprobe.Start(s.script); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = srv.Close() })
				out = runClient(t, p.ws, clientEnv(home, srv.URL), claude, "-p", "work through the scripted steps", "--output-format", "json")
				if !s.notStarted {
					break
				}
				t.Logf("attempt %d: Claude Code asked its model before the airlock server was connected; running it again", attempt)
			}
			s.report(t, out)
			if strings.Contains(out, "matches no known tool") {
				t.Errorf("a deny rule names a tool this Claude Code lacks:\n%s", out)
			}
			for _, own := range ownTools {
				if offered(s.tools, own) {
					t.Errorf("Claude Code still offers its model its own %s", own)
				}
			}
			reqs := srv.Requests()
			if len(reqs) == 0 {
				t.Fatalf("no model request; output:\n%s", out)
			}
			checkLedger(t, p, s, reqs[len(reqs)-1].Calls, "claude")
		})
	}
}

// trustClaudeFolder marks dir trusted in Claude Code's user state, as accepting its trust
// dialog once does.
func trustClaudeFolder(t *testing.T, home, dir string) {
	t.Helper()
	trust := `{"projects": {"` + dir + `": {"hasTrustDialogAccepted": true}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(trust), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The real Codex, plugged in by `airlock install codex`, run by `codex exec` against the
// scripted model over the Responses API.
func TestCodexSession(t *testing.T) {
	t.Parallel()
	codex := clientBin(t, "codex")
	p := newProject(t, clientsConfig)
	home := t.TempDir()
	s := &session{t: t, naming: func(tool string) (string, string) { return tool, "mcp__airlock" }}
	s.steps = agentSteps(t, p, "exec_command", map[string]any{"cmd": "touch own-shell-marker"}, "own-shell-marker")
	srv, err := clientprobe.Start(s.script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	// The user's own provider settings, before Airlock is installed beside them.
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	provider := fmt.Sprintf(`model = "airlock-scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "AIRLOCK_SCRIPTED_MODEL_KEY"
`, srv.URL)
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(provider), 0o600); err != nil {
		t.Fatal(err)
	}
	runIn(t, p.ws, home, airlockBin, "install", "codex", "--config", p.config)
	check := runIn(t, p.ws, home, airlockBin, "install", "codex", "--config", p.config, "--client-bin", codex, "--check")
	if strings.Contains(check, "FAIL") || !strings.Contains(check, "airlock tools offered to the model: ") {
		t.Errorf("install --check:\n%s", check)
	}
	out := runClient(t, p.ws, clientEnv(home, srv.URL), codex, "exec", "--skip-git-repo-check", "work through the scripted steps")
	s.report(t, out)
	for _, own := range ownTools {
		if offered(s.tools, own) {
			t.Errorf("Codex still offers its model its own %s", own)
		}
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatalf("no model request; output:\n%s", out)
	}
	checkLedger(t, p, s, reqs[len(reqs)-1].Calls, "codex")
}

// Codex offers models it knows (gpt-5.5) its own apply_patch even with its shell off, and no
// key removes it: with the config `airlock install codex` writes, the patch is refused and
// writes nothing, and AGENTS.md tells the model to use the airlock tools.
func TestCodexApplyPatchWritesNothing(t *testing.T) {
	t.Parallel()
	codex := clientBin(t, "codex")
	p := newProject(t, clientsConfig)
	home := t.TempDir()
	s := &session{t: t, steps: []step{{name: "apply_patch", tool: "apply_patch", own: true,
		check: func(r clientprobe.Result) error {
			if _, err := os.Stat(filepath.Join(p.ws, "patched-marker.txt")); err == nil {
				return fmt.Errorf("Codex's apply_patch wrote patched-marker.txt")
			}
			return nil
		}}}}
	srv, err := clientprobe.Start(func(req clientprobe.Request) clientprobe.Reply {
		if len(req.Calls) == 0 {
			s.mu.Lock()
			s.tools = req.Tools
			s.mu.Unlock()
			return clientprobe.Reply{Tool: "apply_patch", Input: "*** Begin Patch\n*** Add File: patched-marker.txt\n+marker\n*** End Patch\n"}
		}
		return s.script(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	// The user had let Codex write in the workspace; the install takes that back.
	provider := fmt.Sprintf("model = \"gpt-5.5\"\nsandbox_mode = \"workspace-write\"\nmodel_provider = \"scripted\"\n\n[model_providers.scripted]\nname = \"scripted\"\n"+
		"base_url = \"%s/v1\"\nwire_api = \"responses\"\nenv_key = \"AIRLOCK_SCRIPTED_MODEL_KEY\"\n", srv.URL)
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(provider), 0o600); err != nil {
		t.Fatal(err)
	}
	runIn(t, p.ws, home, airlockBin, "install", "codex", "--config", p.config)
	out := runClient(t, p.ws, clientEnv(home, srv.URL), codex, "exec", "--skip-git-repo-check", "work through the scripted steps")
	if !offered(s.tools, "apply_patch") {
		t.Logf("Codex no longer offers apply_patch for gpt-5.5 (tools %v): the refusal is not exercised", s.tools)
	}
	reqs := srv.Requests()
	if len(reqs) < 2 {
		t.Fatalf("Codex never sent the patch's result back; output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(p.ws, "patched-marker.txt")); err == nil {
		t.Fatal("Codex's apply_patch wrote patched-marker.txt")
	}
	if r, ok := reqs[len(reqs)-1].Last(); !ok || !strings.Contains(r.Text, "read-only") {
		t.Errorf("the model was not told the patch was refused: %+v", r)
	}
	agents, err := os.ReadFile(filepath.Join(home, ".codex", "AGENTS.md"))
	if err != nil || !strings.Contains(string(agents), "Do not use apply_patch") {
		t.Errorf("AGENTS.md: %q %v", agents, err)
	}
}
