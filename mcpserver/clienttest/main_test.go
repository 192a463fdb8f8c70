package clienttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/configs/configtest"
	"github.com/airlock-dev/airlock/internal/buildtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// airlockBin is the binary built once for the package's tests.
var airlockBin string

func TestMain(m *testing.M) {
	buildtest.Main(m, "clienttest", &airlockBin, nil)
}

func npmDir() string {
	if d := os.Getenv("AIRLOCK_NPM_DIR"); d != "" {
		return d
	}
	return "/var/cache/airlock/npm"
}

// need skips when what a test needs is missing, unless CI requires the MCP clients.
func need(t *testing.T, what, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if os.Getenv("AIRLOCK_REQUIRE_MCP_CLIENTS") == "1" {
		t.Fatalf("%s missing at %s (AIRLOCK_REQUIRE_MCP_CLIENTS=1)", what, path)
	}
	t.Skipf("%s missing at %s", what, path)
}

// project is a workspace with its config and state, as a user would set one up.
type project struct {
	dir, ws, config string
}

func newProject(t *testing.T, extra string) project {
	t.Helper()
	dir := t.TempDir()
	p := project{dir: dir, ws: filepath.Join(dir, "ws"), config: filepath.Join(dir, "airlock.toml")}
	if err := os.MkdirAll(p.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `[environment]
type = "local"
workspace = "ws"
timeout = 60
[ledger]
path = "state/receipts.jsonl"
` + configtest.AskToRunCode(extra)
	if err := os.WriteFile(p.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// connect starts `airlock mcp` for p as a child process and connects a Go SDK client.
func (p project) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(airlockBin, "mcp", "--config", p.config)
	cmd.Dir = p.ws
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("airlock mcp stderr:\n%s", stderr.String())
		}
	})
	c := mcp.NewClient(&mcp.Implementation{Name: "airlock-go-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// airlock runs the binary as a second process, the way a person in another terminal would.
func (p project) airlock(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(airlockBin, args...)
	cmd.Dir = p.ws
	cmd.Env = append(os.Environ(), "AIRLOCK_CONFIG="+p.config)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// lockedBuffer collects a child's stderr, shown when a test fails.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
