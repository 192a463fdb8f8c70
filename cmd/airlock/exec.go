package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"mvdan.cc/sh/v3/syntax"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

func init() {
	register(command{name: "exec", summary: "run one command through the full pipeline, streaming its output", run: runExec})
}

// Exit codes of airlock exec when the command did not run to its own exit.
const (
	exitDenied      = 126 // refused by policy, approval or a hook, as a shell says "cannot execute"
	exitTimeout     = 124 // as timeout(1)
	exitFailed      = 125
	exitInterrupted = 130 // as a shell reports SIGINT
)

// commandLine turns exec's arguments into the command the terminal tool runs: one argument is
// a shell string as it is ('ls | wc -l'); several are words, each quoted, so that
// `airlock exec -- rm -r "my dir"` removes "my dir" and nothing else.
func commandLine(args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	words := make([]string, len(args))
	for i, a := range args {
		q, err := syntax.Quote(a, syntax.LangPOSIX)
		if err != nil {
			return "", fmt.Errorf("argument %d: %w", i+1, err)
		}
		words[i] = q
	}
	return strings.Join(words, " "), nil
}

func runExec(args []string, s stdio) int {
	var cf commonFlags
	var timeout float64
	var workdir string
	fs := newFlagSet("exec", "exec [--config FILE] [--timeout SECONDS] [--workdir DIR] -- COMMAND...", s)
	cf.register(fs)
	fs.Float64Var(&timeout, "timeout", 0, "seconds before the command and its children are killed (default: the config's)")
	fs.StringVar(&workdir, "workdir", "", "directory inside the workspace to run in")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	command, err := commandLine(fs.Args())
	if err != nil {
		return fail(s, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sess, log, closeAll, err := openSession(ctx, cf, s)
	if err != nil {
		return fail(s, err)
	}
	defer closeAll()

	a := terminal.Args{Command: command, Workdir: workdir}
	if timeout > 0 {
		a.Timeout = &timeout
	}
	raw, _ := json.Marshal(a)
	ctx = tool.WithStream(ctx, &tool.Stream{Stdout: s.out, Stderr: s.err})
	res := sess.Run(ctx, pipeline.Call{Name: terminal.Name, Arguments: raw})
	log.Debug("call finished", "call_id", res.CallID, "status", res.Status, "outcome", res.Receipt.Outcome)
	switch res.Status {
	case pipeline.StatusOK:
		// The command's output went to the terminal as it ran; what the sandbox refused it
		// follows, since its own message ("Permission denied") does not say why.
		for _, n := range res.Metadata.Notes {
			if strings.HasPrefix(n, backend.RefusedNote) {
				fmt.Fprintf(s.err, "airlock: %s\n", n)
			}
		}
		if res.Metadata.ExitCode != nil {
			return *res.Metadata.ExitCode
		}
		return 0
	case pipeline.StatusTimeout:
		fmt.Fprintf(s.err, "airlock: %s\n", res.ErrorMessage)
		return exitTimeout
	case pipeline.StatusInterrupted, pipeline.StatusCancelled:
		fmt.Fprintf(s.err, "airlock: %s\n", res.ErrorMessage)
		return exitInterrupted
	case pipeline.StatusDenied, pipeline.StatusBlocked:
		fmt.Fprintf(s.err, "airlock: refused (%s): %s\n", res.ErrorCode, res.ErrorMessage)
		return exitDenied
	default:
		fmt.Fprintf(s.err, "airlock: %s (%s): %s\n", res.Status, res.ErrorCode, res.ErrorMessage)
		return exitFailed
	}
}
