package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

// gate is a tool whose calls each wait, before they return, until the test opens the gate
// named by their argument; a gate the test never opens fails the call after a while, so
// that a pipeline that does not stream ends the test instead of hanging it.
type gates struct {
	mu   sync.Mutex
	open map[string]chan struct{}
}

func (g *gates) ch(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[name] == nil {
		g.open[name] = make(chan struct{})
	}
	return g.open[name]
}

// payload is a result's data, so that the test can watch whether it is still held.
type payload struct{ Name string }

func (g *gates) tool() tool.Definition {
	return tool.Definition{
		Name: "gate", Risk: tool.RiskRead, ParallelSafe: true,
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"wait":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
			var a struct{ Wait string }
			_ = json.Unmarshal(inv.Args, &a)
			if a.Wait != "" {
				select {
				case <-g.ch(a.Wait):
				case <-time.After(10 * time.Second):
					return &tool.Output{Status: tool.StatusFailed, ErrorMessage: "gate " + a.Wait + " never opened"}, nil
				}
			}
			return &tool.Output{Content: "passed", Data: &payload{Name: inv.CallID}}, nil
		},
	}
}

func gateCall(id, wait string) pipeline.Call {
	return pipeline.Call{ID: id, Name: "gate", Arguments: json.RawMessage(`{"wait":"` + wait + `"}`)}
}

// TestRunBatchFuncStreams: a result leaves as soon as its call and every earlier one are
// over, in input order, with its completed receipt line already in the ledger. The batch's
// last call waits until the test has seen the first result, so a pipeline that held results
// to the end of the batch fails it; the first call waits until the second is over, so one
// that released results as they came, not in order, fails it too.
func TestRunBatchFuncStreams(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := &gates{open: map[string]chan struct{}{}}
	must(t, f.options.Registry.Register(g.tool()))
	p, err := pipeline.New(f.options)
	must(t, err)
	calls := []pipeline.Call{gateCall("c0", "second-over"), gateCall("c1", ""), gateCall("c2", "first-seen")}
	// The second call is over once its completed line is in the ledger.
	go func() {
		for !completedInLedger(f.ledger, "c1") {
			time.Sleep(time.Millisecond)
		}
		close(g.ch("second-over"))
	}()
	var order []string
	p.RunBatchFunc(context.Background(), calls, func(i int, r pipeline.Result) {
		order = append(order, r.CallID)
		if r.CallID != calls[i].ID || r.Status != pipeline.StatusOK {
			t.Errorf("result %d: %s %s %s", i, r.CallID, r.Status, r.ErrorMessage)
		}
		if !completedInLedger(f.ledger, r.CallID) {
			t.Errorf("%s left before its completed line was in the ledger", r.CallID)
		}
		if i == 0 {
			close(g.ch("first-seen"))
		}
	})
	if got := strings.Join(order, " "); got != "c0 c1 c2" {
		t.Errorf("results left as %q, want c0 c1 c2", got)
	}
}

// TestRunBatchFuncReleasesCalls: once a result has left, the pipeline holds nothing of its
// call: its request (what policy saw), its receipt and its data are collected while a later
// call of the batch is still running.
func TestRunBatchFuncReleasesCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := &gates{open: map[string]chan struct{}{}}
	must(t, f.options.Registry.Register(g.tool()))
	var req weak.Pointer[pipeline.Request]
	o := f.options
	o.Policy = policyFunc(func(ctx context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
		if r.Call.ID == "c0" {
			req = weak.Make(r)
		}
		return allowAll{}.Check(ctx, r)
	})
	p, err := pipeline.New(o)
	must(t, err)
	released := make(chan bool, 1)
	var recW, dataW func() bool
	go func() {
		<-g.ch("first-seen")
		// The first result has left; the batch's last call is still running.
		gone := false
		for deadline := time.Now().Add(5 * time.Second); !gone && time.Now().Before(deadline); {
			runtime.GC()
			gone = req.Value() == nil && recW() && dataW()
			time.Sleep(time.Millisecond)
		}
		released <- gone
		close(g.ch("checked"))
	}()
	calls := []pipeline.Call{gateCall("c0", ""), gateCall("c1", "checked")}
	p.RunBatchFunc(context.Background(), calls, func(i int, r pipeline.Result) {
		if r.Status != pipeline.StatusOK {
			t.Errorf("result %d: %s %s", i, r.Status, r.ErrorMessage)
		}
		if i == 0 {
			wr, wd := weak.Make(r.Receipt), weak.Make(r.Data.(*payload))
			recW = func() bool { return wr.Value() == nil }
			dataW = func() bool { return wd.Value() == nil }
			close(g.ch("first-seen"))
		}
	})
	if !<-released {
		t.Error("the first call's request, receipt or data was still held after its result left")
	}
}

// completedInLedger reports whether the ledger at path holds a completed line for the call.
func completedInLedger(path, callID string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, `"event":"completed"`) && strings.Contains(line, `"call_id":"`+callID+`"`) {
			return true
		}
	}
	return false
}
