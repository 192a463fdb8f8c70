package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// commonFlags are the flags every command that runs calls shares.
type commonFlags struct {
	config   string
	logLevel string
	session  string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", os.Getenv("AIRLOCK_CONFIG"), "config file (default: ./airlock.toml if present, else built-in defaults; env AIRLOCK_CONFIG)")
	level := os.Getenv("AIRLOCK_LOG_LEVEL")
	if level == "" {
		level = "warn"
	}
	fs.StringVar(&c.logLevel, "log-level", level, "log level on stderr: trace, debug, info, warn, error, off (env AIRLOCK_LOG_LEVEL)")
	fs.StringVar(&c.session, "session", "", "session ID: keeps denial counts and file state between invocations (under .airlock/sessions)")
}

func newLogger(level string, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "airlock",
		Level:  hclog.LevelFromString(level),
		Output: w,
	})
}

// newFlagSet returns a flag set that prints its usage to stderr and does not exit.
func newFlagSet(name, usage string, s stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprintf(s.err, "Usage: airlock %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; it returns (exit code, done) when the command should stop now
// (help asked for, or bad flags).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

// stack is everything a run needs, opened from a config.
type stack struct {
	cfg      *configs.Config
	log      hclog.Logger
	env      backend.Environment
	ledger   *receipt.Ledger
	pipeline *pipeline.Pipeline
	closers  []func() error
}

// extension adds to a stack being assembled: more tools, a policy, an approval, hooks.
// Packages that arrive later (file tools, approvals) each register one from a file of
// their own, so this function does not change when they do.
type extension func(ctx context.Context, st *stack, reg *tool.Registry, opts *pipeline.Options, s stdio) error

var extensions []namedExtension

type namedExtension struct {
	name string
	fn   extension
}

func registerExtension(name string, fn extension) {
	extensions = append(extensions, namedExtension{name, fn})
}

// assemble loads the config and opens the environment, the ledger and the pipeline.
func assemble(ctx context.Context, cf commonFlags, s stdio) (*stack, error) {
	log := newLogger(cf.logLevel, s.err)
	cfg, err := configs.Load(cf.config)
	if err != nil {
		return nil, err
	}
	st := &stack{cfg: cfg, log: log}
	env, err := openEnvironment(ctx, cfg, log)
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	st.env = env
	st.closers = append(st.closers, func() error { return env.Close(context.WithoutCancel(ctx)) })
	ledger, err := receipt.Open(cfg.LedgerPath())
	if err != nil {
		st.close()
		return nil, fmt.Errorf("ledger.path: %w", err)
	}
	st.ledger = ledger
	st.closers = append(st.closers, ledger.Close)

	reg := tool.NewRegistry()
	if err := reg.Register(terminal.Definition(terminal.Options{MaxOutputChars: cfg.Tools.MaxOutputChars})); err != nil {
		st.close()
		return nil, err
	}
	sess := session.NewMemory()
	if cf.session != "" {
		if sess, err = session.Open(filepath.Join(filepath.Dir(cfg.LedgerPath()), "sessions"), cf.session); err != nil {
			st.close()
			return nil, err
		}
		st.closers = append(st.closers, sess.Close)
	}
	stale := &session.StaleCheck{Store: sess, Readers: []string{"read_file"}, Writers: []string{"write_file", "patch"}}
	opts := pipeline.Options{
		Registry:       reg,
		Env:            env,
		Ledger:         ledger,
		Logger:         log,
		StoreArguments: cfg.Ledger.StoreArguments,
		MaxOutputChars: cfg.Tools.MaxOutputChars,
		SessionID:      cf.session,
		Session:        sess,
		PreHooks:       []pipeline.PreHook{stale},
		PostHooks:      []pipeline.PostHook{stale},
	}
	for _, ext := range extensions {
		if err := ext.fn(ctx, st, reg, &opts, s); err != nil {
			st.close()
			return nil, fmt.Errorf("%s: %w", ext.name, err)
		}
	}
	p, err := pipeline.New(opts)
	if err != nil {
		st.close()
		return nil, err
	}
	st.pipeline = p
	return st, nil
}

func (st *stack) close() {
	for i := len(st.closers) - 1; i >= 0; i-- {
		if err := st.closers[i](); err != nil && st.log != nil {
			st.log.Warn("close failed", "error", err)
		}
	}
	st.closers = nil
}

// fail prints an error the way every command does and returns exit code 2.
func fail(s stdio, err error) int {
	msg := err.Error()
	if !strings.HasPrefix(msg, "airlock") {
		msg = "airlock: " + msg
	}
	fmt.Fprintln(s.err, msg)
	return 2
}
