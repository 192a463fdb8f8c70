package engine

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/plan"
	"github.com/airlock-dev/airlock/session"
)

// SessionOption sets what one session is opened with.
type SessionOption func(*sessionOptions)

type sessionOptions struct {
	plan *plan.Spec
}

// WithPlan opens the session under a plan of its own, in place of the config's [plan].
func WithPlan(s plan.Spec) SessionOption {
	return func(o *sessionOptions) { o.plan = &s }
}

// ErrInvalidPlan wraps a plan that names what is wrong with it (a [plan.FieldError]).
var ErrInvalidPlan = errors.New("invalid plan")

// sessionPlan is the plan a new session is held to: its own (checked now), else the
// config's (checked once, when the engine was built), else none.
func (e *Engine) sessionPlan(so sessionOptions) (*plan.Plan, error) {
	switch {
	case so.plan != nil:
		if err := e.checkPlan(*so.plan); err != nil {
			return nil, err
		}
		return plan.New(*so.plan), nil
	case e.cfg.Plan != nil:
		return plan.New(*e.cfg.Plan), nil
	}
	return nil, nil
}

// checkPlan checks a plan against the tools the engine offers.
func (e *Engine) checkPlan(spec plan.Spec) error {
	known := func(name string) bool { _, ok := e.reg.Lookup(name); return ok }
	if err := spec.Validate(known); err != nil {
		return fmt.Errorf("%w: plan.%w", ErrInvalidPlan, err)
	}
	return nil
}

// Plan returns the state of the session's plan, nil without one.
func (s *Session) Plan() *plan.State {
	if s.plan == nil {
		return nil
	}
	st := s.plan.State()
	return &st
}

// checks are the policy checks after the path policy: the engine's (the URL guard), then
// the session's plan.
func (s *Session) checks() []pipeline.Policy {
	out := append([]pipeline.Policy(nil), s.e.checks...)
	if s.plan != nil {
		out = append(out, s.plan)
	}
	return out
}

func (s *Session) preHooks(stale *session.StaleCheck) []pipeline.PreHook {
	out := append([]pipeline.PreHook{stale}, s.e.preHooks...)
	if s.plan != nil {
		out = append(out, s.plan)
	}
	return out
}

func (s *Session) postHooks(stale *session.StaleCheck) []pipeline.PostHook {
	out := []pipeline.PostHook{stale}
	if s.plan != nil {
		out = append(out, s.plan)
	}
	return out
}
