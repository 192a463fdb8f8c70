package plan_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/plan"
	"github.com/airlock-dev/airlock/receipt"
)

var known = func(n string) bool { return n == "read_file" || n == "write_file" || n == "terminal" }

func TestValidateNamesTheField(t *testing.T) {
	ok := plan.Step{Name: "a", Tools: []string{"read_file"}}
	cases := []struct {
		spec  plan.Spec
		field string
	}{
		{plan.Spec{}, "steps"},
		{plan.Spec{Steps: []plan.Step{{Tools: []string{"read_file"}}}}, "steps[0].name"},
		{plan.Spec{Steps: []plan.Step{ok, ok}}, "steps[1].name"},
		{plan.Spec{Steps: []plan.Step{{Name: "a"}}}, "steps[0].tools"},
		{plan.Spec{Steps: []plan.Step{ok, {Name: "b", Tools: []string{"terminal", "rm"}}}}, "steps[1].tools[1]"},
		{plan.Spec{Steps: []plan.Step{{Name: "a", Tools: []string{"read_file"}, CompleteOn: "terminal"}}}, "steps[0].complete_on"},
		{plan.Spec{Steps: []plan.Step{{Name: "a", Tools: []string{"read_file"}, Calls: -1}}}, "steps[0].calls"},
	}
	for _, c := range cases {
		var fe *plan.FieldError
		if err := c.spec.Validate(known); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want an error naming %s", c.spec, err, c.field)
		}
	}
	if err := (plan.Spec{Steps: []plan.Step{ok}}).Validate(known); err != nil {
		t.Fatal(err)
	}
}

func call(p *plan.Plan, tool string) (string, bool) {
	v, _ := p.Check(context.Background(), &pipeline.Request{Call: pipeline.Call{Name: tool}})
	b, _ := p.Before(context.Background(), &pipeline.Request{Call: pipeline.Call{Name: tool}})
	if (v.Decision == pipeline.Allow) != (b == nil) {
		panic("check and pre-hook disagree")
	}
	if b != nil {
		if v.Code != pipeline.CodePreHookBlocked || !v.Block {
			panic("a refusal that is not a block")
		}
		return b.Message, false
	}
	return "", true
}

func ran(p *plan.Plan, tool string, st pipeline.Status) {
	p.After(context.Background(), nil, pipeline.Result{ToolName: tool, Status: st, ErrorCode: "x",
		Receipt: &receipt.Receipt{HandlerStarted: st != pipeline.StatusDenied}})
}

// Read first (twice, counted on read_file only), then write; a failure marks the step
// failed and a success still completes it; once complete, nothing runs.
func TestStepsAdvance(t *testing.T) {
	p := plan.New(plan.Spec{Steps: []plan.Step{
		{Name: "inspect", Tools: []string{"read_file", "terminal"}, CompleteOn: "read_file", Calls: 2},
		{Name: "change", Tools: []string{"write_file"}},
	}})
	if msg, ok := call(p, "write_file"); ok || !strings.Contains(msg, `step 1 of 2, "inspect"`) || !strings.Contains(msg, "read_file, terminal") {
		t.Fatalf("write in step 1: %v %q", ok, msg)
	}
	ran(p, "terminal", pipeline.StatusOK) // allowed, but not the completing tool
	ran(p, "read_file", pipeline.StatusDenied)
	ran(p, "read_file", pipeline.StatusFailed)
	if s := p.State(); s.Steps[0].State != plan.Failed || s.Steps[0].Failures != 1 || s.Steps[0].Succeeded != 0 || s.Current != 0 {
		t.Fatalf("after a failure: %+v", s)
	}
	ran(p, "read_file", pipeline.StatusOK)
	if s := p.State(); s.Steps[0].State != plan.Current || s.Current != 0 {
		t.Fatalf("after one of two: %+v", s)
	}
	ran(p, "read_file", pipeline.StatusOK)
	if s := p.State(); s.Steps[0].State != plan.Done || s.Current != 1 || s.Steps[1].State != plan.Current {
		t.Fatalf("after two: %+v", s)
	}
	if _, ok := call(p, "read_file"); ok {
		t.Fatal("read_file ran in step 2")
	}
	if _, ok := call(p, "write_file"); !ok {
		t.Fatal("write_file refused in step 2")
	}
	ran(p, "write_file", pipeline.StatusOK)
	if s := p.State(); !s.Complete || s.Current != -1 {
		t.Fatalf("not complete: %+v", s)
	}
	if msg, ok := call(p, "write_file"); ok || !strings.Contains(msg, "plan is complete") {
		t.Fatalf("after completion: %v %q", ok, msg)
	}
}
