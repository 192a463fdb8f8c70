package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
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
	fs.StringVar(&c.session, "session", "", "session ID: keeps denial counts and file state between invocations (in sessions/ beside the ledger, in the state directory)")
}

func newLogger(level string, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "airlock",
		Level:  hclog.LevelFromString(level),
		Output: w,
	})
}

// openSession builds the runtime from the config the flags name and opens the session they
// name (a fresh ephemeral one without --session). When a person is at the terminal, calls
// that need approval are asked there. The returned function closes it all.
func openSession(ctx context.Context, cf commonFlags, s stdio) (*engine.Session, hclog.Logger, func(), error) {
	log := newLogger(cf.logLevel, s.err)
	cfg, err := configs.Load(cf.config)
	if err != nil {
		return nil, nil, nil, err
	}
	opts := []engine.Option{engine.WithLogger(log)}
	tty := openPromptTTY(s)
	if tty != nil {
		opts = append(opts, engine.WithApprover(approval.NewTTYApprover(tty, tty, approvalPromptTimeout)))
	}
	closeTTY := func() {
		if tty != nil {
			_ = tty.Close()
		}
	}
	eng, err := engine.New(ctx, cfg, opts...)
	if err != nil {
		closeTTY()
		return nil, nil, nil, err
	}
	closeAll := func() {
		if err := eng.Close(context.WithoutCancel(ctx)); err != nil {
			log.Warn("close failed", "error", err)
		}
		closeTTY()
	}
	sess, err := eng.Session(ctx, cf.session)
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	return sess, log, closeAll, nil
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
