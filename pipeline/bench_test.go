package pipeline_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// BenchmarkPipelineOverhead measures what the pipeline itself costs per call, apart from any
// command: a no-op handler behind the full road (registry, input schema, policy, approval,
// scheduler, output schema, receipt). "ledger" adds the two fsynced ledger lines of a call
// that runs; "terminal_true" is a real `true` on the local backend for comparison.
func BenchmarkPipelineOverhead(b *testing.B) {
	ws := b.TempDir()
	env, err := local.New(local.Config{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Close(context.Background()) })
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Definition{
		Name: "noop", Risk: tool.RiskRead, ParallelSafe: true,
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`),
		Handler: func(context.Context, *tool.Invocation) (*tool.Output, error) {
			return &tool.Output{Content: "ok", Data: map[string]any{"ok": true}}, nil
		},
	}); err != nil {
		b.Fatal(err)
	}
	if err := reg.Register(terminal.Definition(terminal.Options{})); err != nil {
		b.Fatal(err)
	}
	ledger, err := receipt.Open(filepath.Join(b.TempDir(), "r.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer ledger.Close()
	noop := pipeline.Call{ID: "n", Name: "noop", Arguments: json.RawMessage(`{"x":"y"}`)}
	run := func(b *testing.B, opts pipeline.Options, c pipeline.Call) {
		p, err := pipeline.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if r := p.Run(context.Background(), c); r.Status != pipeline.StatusOK {
				b.Fatalf("status %s: %s", r.Status, r.ErrorMessage)
			}
		}
	}
	b.Run("no_ledger", func(b *testing.B) {
		run(b, pipeline.Options{Registry: reg, Env: env, Policy: allowAll{}, Approval: allowAll{}}, noop)
	})
	b.Run("ledger", func(b *testing.B) {
		run(b, pipeline.Options{Registry: reg, Env: env, Policy: allowAll{}, Approval: allowAll{}, Ledger: ledger}, noop)
	})
	b.Run("terminal_true", func(b *testing.B) {
		run(b, pipeline.Options{Registry: reg, Env: env, Policy: allowAll{}, Approval: allowAll{}}, pipeline.Call{ID: "t", Name: "terminal", Arguments: json.RawMessage(`{"command":"true"}`)})
	})
}
