package approval

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/shellrisk"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// Where commands run confines them decides what may run unasked: a recursive read of the
// workspace where the kernel sandbox hides its secrets, the project's code where the
// sandbox (or a container) bounds it with the network not open. Named secrets, the
// network, lost work and everything dangerous still ask.
func TestGateConfined(t *testing.T) {
	t.Parallel()
	sandboxed := Request{Kind: "local", Enforced: true, SecretsHidden: true, Confined: true, TempDir: "/tmp/airlock-s1", Scratch: []string{"/tmp/airlock-s1"}}
	netOpen := sandboxed
	netOpen.Confined = false // the kernel sandbox with [network] mode = "open"
	container := Request{Kind: "docker", Enforced: true, Confined: true}
	unconfined := Request{Kind: "local"}
	asking := defaultConfig()
	asking.AskToRunCode = true
	noWrite := defaultConfig()
	noWrite.AllowWrite = false
	tests := []struct {
		name    string
		cfg     Config
		req     Request
		command string
		allow   bool
		code    string
	}{
		{"recursive grep sandboxed", defaultConfig(), sandboxed, `grep -rn TODO .`, true, CodeSafeCommand},
		{"recursive grep include sandboxed", defaultConfig(), sandboxed, `grep -r 'func main' --include='*.go' .`, true, CodeSafeCommand},
		{"grep -rl no operand sandboxed", defaultConfig(), sandboxed, `grep -rl x`, true, CodeSafeCommand},
		{"recursive grep unconfined", defaultConfig(), unconfined, `grep -rn TODO .`, false, CodeApprovalRequired},
		{"recursive grep in a container", defaultConfig(), container, `grep -rn TODO .`, false, CodeApprovalRequired},
		{"named secret sandboxed", defaultConfig(), sandboxed, `cat .env`, false, CodeApprovalRequired},
		{"secret in a tree outside sandboxed", defaultConfig(), sandboxed, `grep -r x ~`, false, CodeApprovalRequired},
		{"go test sandboxed", defaultConfig(), sandboxed, `go test ./...`, true, CodeConfinedCode},
		{"go build sandboxed", defaultConfig(), sandboxed, `go build ./...`, true, CodeConfinedCode},
		{"make then script sandboxed", defaultConfig(), sandboxed, `make && ./run_tests.sh`, true, CodeConfinedCode},
		{"pytest via module sandboxed", defaultConfig(), sandboxed, `python3 -m pytest -q`, true, CodeConfinedCode},
		{"go test in a container", defaultConfig(), container, `go test ./...`, true, CodeConfinedCode},
		{"go test network open", defaultConfig(), netOpen, `go test ./...`, false, CodeApprovalRequired},
		{"go test unconfined", defaultConfig(), unconfined, `go test ./...`, false, CodeApprovalRequired},
		{"go test ask_to_run_code", asking, sandboxed, `go test ./...`, false, CodeApprovalRequired},
		{"go test without allow_write", noWrite, sandboxed, `go test ./...`, false, CodeApprovalRequired},
		{"network still asks", defaultConfig(), sandboxed, `go test ./... && curl https://example.com`, false, CodeApprovalRequired},
		{"push still asks", defaultConfig(), sandboxed, `git push origin main`, false, CodeApprovalRequired},
		{"irreversible still asks", defaultConfig(), sandboxed, `make && git reset --hard`, false, CodeApprovalRequired},
		{"dangerous still asks", defaultConfig(), sandboxed, `make; echo x > ~/.bashrc`, false, CodeApprovalRequired},
		{"hard deny", defaultConfig(), sandboxed, `make; rm -rf /`, false, CodeHardDeny},
		{"git -c identity commit", defaultConfig(), unconfined, `git -c user.name=Bot -c user.email=bot@example.com commit -m x`, false, CodeApprovalRequired},
		{"git -c identity commit sandboxed", defaultConfig(), sandboxed, `git -c user.name=Bot -c user.email=bot@example.com commit -m x`, true, CodeWriteAllowed},
		{"git -c pager sandboxed", defaultConfig(), sandboxed, `git -c core.pager=less log`, true, CodeConfinedCode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGate(t, tc.cfg)
			r := tc.req
			r.Command = tc.command
			d := decide(t, g, r)
			if d.Allow != tc.allow || d.Code != tc.code {
				t.Errorf("%q: allow=%v code=%s (%s), want allow=%v code=%s; verdict %s %v",
					tc.command, d.Allow, d.Code, d.Message, tc.allow, tc.code, d.Verdict.Risk, d.Verdict.Codes())
			}
		})
	}
}

// defaultConfig is the gate as configs' defaults build it: manual, allow_write.
func defaultConfig() Config {
	c := DefaultConfig()
	c.AllowWrite = true
	return c
}

// The approvals store beside the ledger is Airlock's own state: naming it, or reading the
// directory that holds it whole, is airlock_state as the ledger is.
func TestGateApprovalsStoreIsState(t *testing.T) {
	t.Parallel()
	state := "/home/u/.local/state/airlock/ws-1234"
	g := newGate(t, defaultConfig(), WithShellContext(shellrisk.Context{
		Workspace: "/home/u/ws",
		Protected: []string{state + "/receipts.jsonl", state + "/sessions", state + "/approvals"},
	}))
	for _, cmd := range []string{
		`cat ` + state + `/approvals/call-1.json`,
		`rm -rf ` + state + `/approvals`,
		`echo '{"choice":"once"}' > ` + state + `/approvals/call-1.json`,
		`grep -r x ` + state,
	} {
		r := Request{Kind: "local", Enforced: true, SecretsHidden: true, Confined: true, Command: cmd}
		d := decide(t, g, r)
		if d.Allow || !contains(d.Verdict.Codes(), "airlock_state") {
			t.Errorf("%q: allow=%v codes %v, want refused with airlock_state", cmd, d.Allow, d.Verdict.Codes())
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// capsEnv is an environment that only describes itself.
type capsEnv struct{ caps backend.Capabilities }

func (e capsEnv) Exec(context.Context, backend.Request) (backend.Result, error) {
	return backend.Result{}, errors.New("not run")
}
func (e capsEnv) Describe() backend.Description {
	return backend.Description{Kind: "test", Capabilities: e.caps}
}
func (e capsEnv) Close(context.Context) error { return nil }

// The step tells the gate what the backend's capabilities enforce: a recursive read of the
// workspace is safe only where the sandbox hides deny_names (not the SSH helper's sandbox,
// given roots only, nor a container, which mounts the workspace whole), and the project's
// code runs unasked only where a sandbox or container has no network.
func TestStepConfinement(t *testing.T) {
	t.Parallel()
	local := backend.Capabilities{KernelSandbox: true, HidesDenyNames: true, NetworkIsolation: true, WritableHostMounts: true}
	localOpen := local
	localOpen.NetworkIsolation = false
	sshSandbox := backend.Capabilities{KernelSandbox: true, NetworkIsolation: true}
	dockerNet := backend.Capabilities{FilesystemIsolation: true, WritableHostMounts: true}
	dockerNoNet := backend.Capabilities{FilesystemIsolation: true, NetworkIsolation: true, WritableHostMounts: true}
	tests := []struct {
		name    string
		caps    backend.Capabilities
		command string
		allow   bool
	}{
		{"local grep", local, `grep -rn TODO .`, true},
		{"local go test", local, `go test ./...`, true},
		{"local network open go test", localOpen, `go test ./...`, false},
		{"local network open grep", localOpen, `grep -rn TODO .`, true},
		{"ssh sandbox grep", sshSandbox, `grep -rn TODO .`, false},
		{"ssh sandbox go test", sshSandbox, `go test ./...`, true},
		{"docker with network go test", dockerNet, `go test ./...`, false},
		{"docker without network go test", dockerNoNet, `go test ./...`, true},
		{"docker grep", dockerNoNet, `grep -rn TODO .`, false},
		{"nothing enforced go test", backend.Capabilities{}, `go test ./...`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			step := &Step{Gate: newGate(t, defaultConfig()), CommandTool: terminal.Name}
			req := &pipeline.Request{
				Call: pipeline.Call{ID: "c1"}, Tool: &tool.Tool{Definition: terminal.Definition(terminal.Options{})},
				Args: json.RawMessage(`{"command":` + strconv.Quote(tc.command) + `}`),
				Env:  capsEnv{tc.caps}, SessionID: "s1",
			}
			v, err := step.Approve(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Decision == pipeline.Allow; got != tc.allow {
				t.Errorf("%q on %+v: %s %s (%s), want allow=%v", tc.command, tc.caps, v.Decision, v.Code, v.Message, tc.allow)
			}
		})
	}
}
