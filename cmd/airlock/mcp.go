package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/mcpserver"
)

func init() {
	register(command{name: "mcp", summary: "serve the tools to a coding agent over MCP (stdio)", run: runMCP})
}

func runMCP(args []string, s stdio) int {
	var cf commonFlags
	var check, asJSON bool
	elicit := true
	fs := newFlagSet("mcp", "mcp [--config FILE] [--session ID] [--elicit=false] [--check [--json]]", s)
	fs.BoolVar(&elicit, "elicit", true, "ask the person through the client's elicitation when it offers it; false: every approval "+
		"comes back approval_pending, answered with airlock approvals (for clients that decline elicitations unasked, as codex exec does)")
	cf.register(fs)
	fs.BoolVar(&check, "check", false, "say which tools would be listed and why the others are not, then exit")
	fs.BoolVar(&asJSON, "json", false, "with --check: print JSON")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Logs go to stderr: stdout carries the protocol and nothing else.
	log := newLogger(cf.logLevel, s.err)
	cfg, err := configs.Load(cf.config)
	if err != nil {
		return fail(s, err)
	}
	// The session lives as long as the client's connection: it is not reaped while idle,
	// since its background jobs would die with it.
	rt, err := openMCPRuntime(ctx, cfg, log, elicit, engine.WithSessionTTL(-1))
	if err != nil {
		return fail(s, err)
	}
	defer rt.close(ctx)
	eng := rt.eng
	sess, err := eng.Session(ctx, cf.session)
	if err != nil {
		return fail(s, err)
	}
	srv, err := rt.server(ctx, sess)
	if err != nil {
		return fail(s, err)
	}
	if check {
		return printCheck(s.out, mcpserver.Check(ctx, eng.Registry(), sess.Environment(), cfg.Tools.Enabled, cfg.Policy.AllowedTools), sess, asJSON)
	}
	log.Info("mcp server ready", "session_id", sess.ID(), "tools", len(srv.Listed()), "approvals", cfg.ApprovalsDir())
	if err := srv.Run(ctx, &mcp.IOTransport{Reader: readCloser(s.in), Writer: writeCloser(s.out)}); err != nil && ctx.Err() == nil {
		log.Debug("mcp session ended", "error", err)
	}
	return 0
}

func printCheck(w io.Writer, avail []mcpserver.Availability, sess *engine.Session, asJSON bool) int {
	d := sess.Environment().Describe()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"backend": d.Kind, "mode": d.Mode, "notes": d.Notes, "tools": avail})
		return 0
	}
	fmt.Fprintf(w, "backend: %s", d.Kind)
	if d.Mode != "" {
		fmt.Fprintf(w, " (%s)", d.Mode)
	}
	fmt.Fprintln(w)
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tTOOLSET\tLISTED\tWHY NOT")
	for _, a := range avail {
		listed := "yes"
		if !a.Listed {
			listed = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, a.Toolset, listed, a.Why)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mcpserver.ApprovalWaitTool, "", "yes", "")
	_ = tw.Flush()
	return 0
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func writeCloser(w io.Writer) io.WriteCloser {
	if wc, ok := w.(io.WriteCloser); ok && w != os.Stderr {
		return wc
	}
	return nopWriteCloser{w}
}
