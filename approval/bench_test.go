package approval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// BenchmarkStepApprove is the approval step's cost for a call that runs unasked: a read
// tool (its declared subject, or all its arguments, is read once per call) and a safe
// terminal command (parsed and classified).
func BenchmarkStepApprove(b *testing.B) {
	env, err := local.New(local.Config{Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Close(context.Background()) })
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Definition{Name: "reader", Risk: tool.RiskRead, InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Invocation) (*tool.Output, error) { return nil, nil }}); err != nil {
		b.Fatal(err)
	}
	if err := reg.Register(terminal.Definition(terminal.Options{})); err != nil {
		b.Fatal(err)
	}
	g, err := approval.NewGate(approval.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	step := &approval.Step{Gate: g, CommandTool: terminal.Name}
	for _, c := range []struct{ name, tool, args string }{
		{"read_tool", "reader", `{"path":"src/main.go","offset":10,"limit":200}`},
		{"terminal_safe", "terminal", `{"command":"ls -la src"}`},
	} {
		t, _ := reg.Lookup(c.tool)
		req := &pipeline.Request{Call: pipeline.Call{ID: "c", Name: c.tool, Arguments: json.RawMessage(c.args)}, Tool: t,
			Args: json.RawMessage(c.args), Env: env, SessionID: "s"}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, err := step.Approve(context.Background(), req); err != nil || v.Decision != pipeline.Allow {
					b.Fatalf("%+v %v", v, err)
				}
			}
		})
	}
}
