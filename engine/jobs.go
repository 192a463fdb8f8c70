package engine

import (
	"context"
	"slices"

	"github.com/airlock-dev/airlock/jobs"
	"github.com/airlock-dev/airlock/terminal"
)

// assembleJobs builds the background-job manager when the jobs toolset is enabled and
// registers the job tools; terminal then takes background: true and, with [jobs]
// promote_after, turns a long foreground command into a job. Jobs belong to their session:
// it kills them when it ends, and Close kills whatever is left.
func (e *Engine) assembleJobs() (terminal.Options, error) {
	opts := terminal.Options{MaxOutputChars: e.cfg.Tools.MaxOutputChars}
	if !e.enabled(jobs.Toolset) || !e.enabled(terminal.Toolset) {
		return opts, nil
	}
	jc := e.cfg.Jobs
	e.jobs = jobs.NewManager(jobs.Options{
		Ledger: e.ledger, Logger: e.log, BufferBytes: jc.BufferBytes,
		MaxRunning: jc.MaxRunning, DefaultTimeout: jc.Timeout.D(),
	})
	for _, d := range jobs.Tools(e.jobs, jobs.ToolOptions{MaxWait: jc.MaxWait.D()}) {
		if err := e.reg.Register(d); err != nil {
			return opts, err
		}
	}
	opts.Jobs = e.jobs
	if e.opts.promote {
		opts.PromoteAfter = jc.PromoteAfter.D()
	}
	return opts, nil
}

// WithJobPromotion lets a long foreground command become a background job after [jobs]
// promote_after. Only a front end whose sessions outlive one call should ask for it (the
// MCP server): for `airlock exec` the job would be killed when the command returns.
func WithJobPromotion() Option {
	return func(o *options) error {
		o.promote = true
		return nil
	}
}

// watchJobs ties a session's jobs to its life.
func (e *Engine) watchJobs(s *Session) {
	if e.jobs == nil {
		return
	}
	id := s.id
	s.OnClose(func() { e.jobs.CloseSession(context.Background(), id) })
}

// closeJobs kills every job before the environments they run in close.
func (e *Engine) closeJobs(ctx context.Context) error {
	if e.jobs == nil {
		return nil
	}
	return e.jobs.Close(ctx)
}

// enabled reports whether [tools] enabled names the toolset: a toolset that is not enabled
// is not registered at all, so no front end lists or runs its tools.
func (e *Engine) enabled(toolset string) bool {
	return slices.Contains(e.cfg.Tools.Enabled, toolset)
}

// runsJobs reports whether the session has a background job running: such a session is not
// idle, whatever the time since its last call.
func (e *Engine) runsJobs(sessionID string) bool {
	return e.jobs != nil && e.jobs.Running(sessionID) > 0
}
