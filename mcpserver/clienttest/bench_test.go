package clienttest

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// BenchmarkMCPOverhead times the same call — read_file of a 12-byte file — through the
// runtime directly and through `airlock mcp` over stdio with the Go SDK client, against the
// same kind of config (local backend, ledger on). The difference is the MCP layer's own
// cost per call: JSON-RPC framing, the SDK on both ends, the pipe and the result mapping.
func BenchmarkMCPOverhead(b *testing.B) {
	setup := func(b *testing.B) project {
		b.Helper()
		dir := b.TempDir()
		p := project{dir: dir, ws: filepath.Join(dir, "ws"), config: filepath.Join(dir, "airlock.toml")}
		if err := os.MkdirAll(p.ws, 0o755); err != nil {
			b.Fatal(err)
		}
		cfg := "[environment]\ntype = \"local\"\nworkspace = \"ws\"\n[ledger]\npath = \"" + ledgerDir(b) + "/receipts.jsonl\"\n"
		if err := os.WriteFile(p.config, []byte(cfg), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p.ws, "tiny.txt"), []byte("hello world\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		return p
	}
	args := json.RawMessage(`{"path": "tiny.txt"}`)

	b.Run("runtime", func(b *testing.B) {
		p := setup(b)
		cfg, err := configs.Load(p.config)
		if err != nil {
			b.Fatal(err)
		}
		eng, err := engine.New(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close(context.Background())
		sess, err := eng.Session(context.Background(), "")
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if r := sess.Run(context.Background(), pipeline.Call{Name: "read_file", Arguments: args}); r.Status != pipeline.StatusOK {
				b.Fatalf("%+v", r)
			}
		}
	})
	b.Run("mcp_stdio", func(b *testing.B) {
		p := setup(b)
		cmd := osexec.Command(airlockBin, "mcp", "--config", p.config)
		cmd.Dir = p.ws
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "tiny.txt"}})
			if err != nil || res.IsError {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}

// ledgerDir puts the benchmark's ledger on tmpfs where there is one, so that the fsyncs of
// a shared, busy disk do not drown the difference being measured (both sides write the
// same ledger lines).
func ledgerDir(b *testing.B) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "airlock-bench-")
		if err == nil {
			b.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return filepath.Join(b.TempDir(), "state")
}
