package servetest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/receipt"
)

func TestTokenIsMadeOnceAndKeptPrivate(t *testing.T) {
	dir, config := project(t, "")
	s := start(t, dir, config)
	if !strings.HasPrefix(s.token, "alk_") || !strings.Contains(strings.Join(s.out, "\n"), "shown this once") {
		t.Fatalf("first start did not show the token: %q", s.out)
	}
	path := filepath.Join(s.stateDir(t), "serve-token")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %s: %v %v, want mode 0600", path, fi.Mode(), err)
	}
	if code := s.do(t, "GET", "/v1/sessions", "", nil); code != 200 {
		t.Fatalf("with the token: %d", code)
	}
	s.signal(t, syscall.SIGTERM)
	if code := s.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	again := start(t, dir, config)
	for _, ln := range again.out {
		if strings.Contains(ln, s.token) {
			t.Fatalf("the second start showed the token again: %q", again.out)
		}
	}
	if again.token != s.token {
		t.Fatal("the second start has another token")
	}
	again.token = ""
	if code := again.do(t, "GET", "/v1/sessions", "", nil); code != 401 {
		t.Fatalf("without the token: %d", code)
	}
	// A token file others can read is refused, not used.
	again.signal(t, syscall.SIGTERM)
	again.wait(t, 20*time.Second)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, airlockBin, "serve", "--config", config, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+s.state)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "lets others read it") {
		t.Fatalf("serve with a 0644 token file: %v %s", err, out)
	}
}

func TestAddressNotLoopbackIsRefused(t *testing.T) {
	_, config := project(t, "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
		cmd := exec.Command(airlockBin, "serve", "--config", config, "--addr", addr)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--allow-remote") {
			t.Errorf("serve --addr %s: %v %s, want exit 2 naming --allow-remote", addr, err, out)
		}
	}
}

// SIGTERM while calls run: a call that ends within the grace period gets its result, one
// that does not is cancelled (its process tree killed); both have receipts, the ledger
// verifies, and the process exits 0.
func TestSIGTERMMidCallLeavesEveryCallReceipted(t *testing.T) {
	dir, config := project(t, "[serve]\nshutdown_grace = \"3s\"\n")
	s := start(t, dir, config)
	var a, b struct{ ID string }
	s.do(t, "POST", "/v1/sessions", "", &a)
	s.do(t, "POST", "/v1/sessions", "", &b)
	type res struct {
		Status  string
		Receipt *receipt.Receipt
		err     error
	}
	post := func(id, body string, out chan<- res) {
		var r res
		resp, err := http.DefaultClient.Do(s.request("POST", "/v1/sessions/"+id+"/calls", body))
		if err == nil {
			defer resp.Body.Close()
			err = json.NewDecoder(resp.Body).Decode(&r)
		}
		r.err = err
		out <- r
	}
	short, long := make(chan res, 1), make(chan res, 1)
	go post(a.ID, `{"name":"terminal","call_id":"short","arguments":{"command":"touch short.started; sleep 1; echo done"}}`, short)
	go post(b.ID, `{"name":"terminal","call_id":"long","arguments":{"command":"touch long.started; sleep 60"}}`, long)
	waitFile(t, filepath.Join(s.ws, "short.started"))
	waitFile(t, filepath.Join(s.ws, "long.started"))
	began := time.Now()
	s.signal(t, syscall.SIGTERM)
	if r := <-short; r.Status != "ok" {
		t.Errorf("the short call: %+v, want ok (it ends within the grace period)", r)
	}
	if r := <-long; r.Status != "interrupted" && r.Status != "cancelled" {
		t.Errorf("the long call: %+v, want interrupted", r)
	}
	if code := s.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("shutdown took %s with a 3s grace period", d)
	}
	if _, err := receipt.VerifyFile(s.ledger); err != nil {
		t.Fatalf("ledger: %v", err)
	}
	fh, err := os.Open(s.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	lines, err := receipt.ReadAll(fh)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]receipt.Outcome{}
	for _, ln := range lines {
		if ln.Event == receipt.EventCompleted && ln.Receipt != nil {
			got[ln.Receipt.CallID] = ln.Receipt.Outcome
		}
	}
	if got["short"] != receipt.Executed || got["long"] != receipt.Interrupted {
		t.Errorf("receipts: %v, want short executed and long interrupted", got)
	}
}

// The official TypeScript SDK client runs its flows against /mcp as it does over stdio.
func TestTypeScriptSDKClientOverHTTP(t *testing.T) {
	sdk := filepath.Join(npmDir(), "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_MCP_CLIENTS") == "1" {
			t.Fatalf("TypeScript SDK missing: %v", err)
		}
		t.Skipf("TypeScript SDK missing: %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	dir, config := project(t, "")
	s := start(t, dir, config)
	script, err := filepath.Abs(filepath.Join("..", "..", "mcpserver", "clienttest", "testdata", "flows.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, sdk, airlockBin, config, s.ws)
	cmd.Env = append(os.Environ(), "AIRLOCK_MCP_URL="+s.url+"/mcp", "AIRLOCK_MCP_TOKEN="+s.token)
	cmd.Dir = s.ws
	out, err := cmd.CombinedOutput()
	t.Logf("flows.mjs over HTTP:\n%s", out)
	if err != nil {
		t.Fatalf("flows.mjs: %v", err)
	}
	for _, step := range []string{"list_tools", "files", "terminal", "dangerous_refused", "elicitation_approved", "elicitation_denied",
		"progress", "cancel", "job_output_twice", "job_kill", "done"} {
		if !strings.Contains(string(out), "ok "+step+"\n") {
			t.Errorf("step %s did not pass", step)
		}
	}
}

func npmDir() string {
	if d := os.Getenv("AIRLOCK_NPM_DIR"); d != "" {
		return d
	}
	return "/var/cache/airlock/npm"
}
