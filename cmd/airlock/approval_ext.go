package main

import (
	"context"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// approvalPromptTimeout is how long a person has to answer; no answer is a denial.
const approvalPromptTimeout = 5 * time.Minute

func init() {
	registerExtension("approvals", func(_ context.Context, st *stack, _ *tool.Registry, opts *pipeline.Options, s stdio) error {
		gopts := []approval.Option{approval.WithLogger(st.log)}
		if tty := openPromptTTY(s); tty != nil {
			st.closers = append(st.closers, tty.Close)
			gopts = append(gopts, approval.WithApprover(approval.NewTTYApprover(tty, tty, approvalPromptTimeout)))
		}
		gate, err := approval.NewGate(st.cfg.Approvals.Config, gopts...)
		if err != nil {
			return err
		}
		opts.Approval = &approval.Step{Gate: gate, CommandTool: terminal.Name}
		opts.NeverParallel = st.cfg.Approvals.NeverParallel
		opts.PathScoped = st.cfg.Approvals.PathScoped
		opts.MaxWorkers = st.cfg.Approvals.MaxToolWorkers
		return nil
	})
}

// openPromptTTY returns the controlling terminal when a person is there to answer: stderr
// is a terminal. Stdin may carry the batch (airlock call), so prompts go through /dev/tty.
// Without one, calls that need a person are refused.
func openPromptTTY(s stdio) *os.File {
	f, ok := s.err.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return tty
}
