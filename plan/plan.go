package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/pipeline"
)

// Step is one step of a plan.
type Step struct {
	// Name names the step in messages and in the plan's state.
	Name string `json:"name" toml:"name"`
	// Tools are the tools a call may use while the step is current.
	Tools []string `json:"tools" toml:"tools"`
	// CompleteOn is the tool whose successful calls complete the step; empty: any of Tools.
	CompleteOn string `json:"complete_on,omitempty" toml:"complete_on"`
	// Calls is how many such calls complete it (default 1).
	Calls int `json:"calls,omitempty" toml:"calls"`
}

// Spec is a plan as given: in config ([plan]), at POST /v1/sessions, or by a front end.
type Spec struct {
	Steps []Step `json:"steps" toml:"steps"`
}

// MaxSteps bounds a plan.
const MaxSteps = 64

// FieldError is a plan that cannot work: Field is where (steps[1].tools[0]).
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Validate checks the plan against the tools offered (known answers whether one is).
func (s Spec) Validate(known func(string) bool) error {
	if len(s.Steps) == 0 || len(s.Steps) > MaxSteps {
		return &FieldError{"steps", fmt.Sprintf("a plan has 1 to %d steps, this one %d", MaxSteps, len(s.Steps))}
	}
	names := map[string]bool{}
	for i, st := range s.Steps {
		at := fmt.Sprintf("steps[%d]", i)
		switch {
		case strings.TrimSpace(st.Name) == "" || len(st.Name) > 128:
			return &FieldError{at + ".name", "a name of 1 to 128 characters is required"}
		case names[st.Name]:
			return &FieldError{at + ".name", fmt.Sprintf("%q names an earlier step too", st.Name)}
		case len(st.Tools) == 0:
			return &FieldError{at + ".tools", "a step allows at least one tool"}
		case st.Calls < 0:
			return &FieldError{at + ".calls", "must be 1 or more (0: the default, 1)"}
		case st.CompleteOn != "" && !slices.Contains(st.Tools, st.CompleteOn):
			return &FieldError{at + ".complete_on", fmt.Sprintf("%q is not one of the step's tools", st.CompleteOn)}
		}
		names[st.Name] = true
		for j, t := range st.Tools {
			if !known(t) {
				return &FieldError{fmt.Sprintf("%s.tools[%d]", at, j), fmt.Sprintf("no tool named %q is offered", t)}
			}
		}
	}
	return nil
}

// Step states.
const (
	Pending = "pending"
	Current = "current"
	Failed  = "failed" // current, and its last call failed
	Done    = "done"
)

// StepState is a step and how far it got.
type StepState struct {
	Step
	State     string `json:"state"`
	Succeeded int    `json:"succeeded"`
	Failures  int    `json:"failures"`
	LastError string `json:"last_error,omitempty"`
}

// State is a plan's state, as the session shows it.
type State struct {
	Steps []StepState `json:"steps"`
	// Current is the index of the current step; -1 once the plan is complete.
	Current  int  `json:"current"`
	Complete bool `json:"complete"`
}

// Plan is a session's plan in force. It is the pipeline's policy check, pre-hook and
// post-hook at once, and safe for concurrent use.
type Plan struct {
	mu    sync.Mutex
	state State
}

// New starts a plan at its first step. The spec must have passed Validate.
func New(s Spec) *Plan {
	p := &Plan{state: State{Steps: make([]StepState, len(s.Steps))}}
	for i, st := range s.Steps {
		if st.Calls == 0 {
			st.Calls = 1
		}
		st.Tools = slices.Clone(st.Tools)
		p.state.Steps[i] = StepState{Step: st, State: Pending}
	}
	p.state.Steps[0].State = Current
	return p
}

// State returns a copy of the plan's state.
func (p *Plan) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.state
	out.Steps = slices.Clone(p.state.Steps)
	return out
}

// refusal says why tool may not run now, or "" when it may.
func (p *Plan) refusal(tool string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Complete {
		return fmt.Sprintf("the session's plan is complete (%d steps done); %q is not run. Open a new session for more work.", len(p.state.Steps), tool)
	}
	st := p.state.Steps[p.state.Current]
	if slices.Contains(st.Tools, tool) {
		return ""
	}
	msg := fmt.Sprintf("the session's plan is at step %d of %d, %q, which allows only %s; %q is not run.",
		p.state.Current+1, len(p.state.Steps), st.Name, strings.Join(st.Tools, ", "), tool)
	if st.CompleteOn != "" {
		msg += fmt.Sprintf(" The step is complete after %d successful %s call(s).", st.Calls, st.CompleteOn)
	} else {
		msg += fmt.Sprintf(" The step is complete after %d successful call(s) of its tools.", st.Calls)
	}
	return msg
}

// Check is the plan's policy check: a call outside the current step is refused before any
// person is asked about it.
func (p *Plan) Check(_ context.Context, req *pipeline.Request) (pipeline.Verdict, error) {
	if msg := p.refusal(req.Call.Name); msg != "" {
		return pipeline.Verdict{Decision: pipeline.Deny, Code: pipeline.CodePreHookBlocked, DecidedBy: "pre_hook:plan",
			Message: msg, Block: true, Retryable: true}, nil
	}
	return pipeline.Verdict{Decision: pipeline.Allow, DecidedBy: "plan"}, nil
}

// Name is the hook's name.
func (p *Plan) Name() string { return "plan" }

// Before is the plan's pre-hook: the same rule, against the step the batch's earlier calls
// left current.
func (p *Plan) Before(_ context.Context, req *pipeline.Request) (*pipeline.Block, error) {
	if msg := p.refusal(req.Call.Name); msg != "" {
		return &pipeline.Block{Message: msg, Retryable: true}, nil
	}
	return nil, nil
}

// After is the plan's post-hook: a success of the completing tool counts towards the
// current step, a call that ran and failed marks it failed.
func (p *Plan) After(_ context.Context, _ *pipeline.Request, r pipeline.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.Complete {
		return
	}
	st := &p.state.Steps[p.state.Current]
	if !slices.Contains(st.Tools, r.ToolName) {
		return
	}
	switch r.Status {
	case pipeline.StatusOK:
		if st.CompleteOn != "" && r.ToolName != st.CompleteOn {
			return
		}
		st.Succeeded, st.State = st.Succeeded+1, Current
		if st.Succeeded < st.Calls {
			return
		}
		st.State = Done
		if p.state.Current++; p.state.Current == len(p.state.Steps) {
			p.state.Current, p.state.Complete = -1, true
			return
		}
		p.state.Steps[p.state.Current].State = Current
	case pipeline.StatusFailed, pipeline.StatusTimeout, pipeline.StatusInterrupted:
		if r.Receipt == nil || !r.Receipt.HandlerStarted {
			return // refused before it ran (a schema mistake): the plan has not moved
		}
		st.State, st.Failures = Failed, st.Failures+1
		st.LastError = r.ErrorCode
	}
}
