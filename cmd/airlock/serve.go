package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/mcpserver"
)

func init() {
	register(command{name: "serve", summary: "serve the tools over HTTP: a sessions and calls API, and MCP at /mcp", run: runServe})
}

func runServe(args []string, s stdio) int {
	var cf commonFlags
	var addr string
	var allowRemote bool
	elicit := true
	fs := newFlagSet("serve", "serve [--config FILE] [--addr HOST:PORT] [--allow-remote]", s)
	cf.register(fs)
	fs.StringVar(&addr, "addr", "", "address to listen on (default: [serve] addr, 127.0.0.1:8765); port 0 picks a free one")
	fs.BoolVar(&allowRemote, "allow-remote", false, "listen on an address that is not loopback (put TLS in front: tokens travel in clear otherwise)")
	fs.BoolVar(&elicit, "elicit", true, "ask the person through an MCP client's elicitation when it offers it")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := newLogger(cf.logLevel, s.err)
	cfg, err := configs.Load(cf.config)
	if err != nil {
		return fail(s, err)
	}
	if addr == "" {
		addr = cfg.Serve.Addr
	}
	if !allowRemote {
		if err := httpapi.CheckLoopback(addr); err != nil {
			return fail(s, fmt.Errorf("serve: %w", err))
		}
	}
	tokens, err := serveTokens(cfg, s)
	if err != nil {
		return fail(s, err)
	}
	rt, err := openMCPRuntime(ctx, cfg, log, elicit, engine.WithMetrics(), engine.WithPrivateEnvironments())
	if err != nil {
		return fail(s, err)
	}
	defer rt.close(ctx)
	wh, err := serveWebhook(cfg)
	if err != nil {
		return fail(s, err)
	}
	srv, err := httpapi.New(httpapi.Options{
		Engine: rt.eng, Tokens: tokens, MaxBodyBytes: cfg.Serve.MaxBodyBytes, Logger: log, Webhook: wh,
		MCPServer: func(ctx context.Context, sess mcpserver.Session) (*mcp.Server, error) {
			ms, err := rt.server(ctx, sess)
			if err != nil {
				return nil, err
			}
			return ms.MCP(), nil
		},
	})
	if err != nil {
		return fail(s, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(s, fmt.Errorf("serve: %w", err))
	}
	fmt.Fprintf(s.out, "airlock serve: listening on http://%s (MCP at /mcp, API at /v1, approvals in %s)\n", ln.Addr(), cfg.ApprovalsDir())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fail(s, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	grace := cfg.Serve.ShutdownGrace.D()
	log.Info("shutting down", "grace", grace.String())
	if err := srv.Shutdown(context.Background(), grace); err != nil {
		log.Warn("shutdown", "error", err)
	}
	<-done
	return 0
}

// serveTokens is the generated token (made and shown on the first start) and the named
// tokens of [serve] tokens.
func serveTokens(cfg *configs.Config, s stdio) (*httpapi.Tokens, error) {
	path := cfg.ServeTokenPath()
	tok, created, err := httpapi.LoadOrCreateToken(path)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	tokens := httpapi.NewTokens()
	tokens.Add(configs.DefaultTokenName, tok)
	for _, t := range cfg.Serve.Tokens {
		if err := tokens.AddHash(t.Name, t.SHA256); err != nil {
			return nil, fmt.Errorf("serve.tokens: %w", err)
		}
	}
	if created {
		fmt.Fprintf(s.out, "airlock serve: generated token %q (shown this once; kept in %s):\n%s\n", configs.DefaultTokenName, path, tok)
	}
	return tokens, nil
}

// serveWebhook is [serve.approval_webhook] with its secret read from the environment; nil
// when no URL is set. A named variable that is empty is refused, not posted unsigned.
func serveWebhook(cfg *configs.Config) (*httpapi.Webhook, error) {
	w := cfg.Serve.ApprovalWebhook
	if w.URL == "" {
		return nil, nil
	}
	secret := os.Getenv(w.SecretEnv)
	if secret == "" {
		return nil, fmt.Errorf("serve.approval_webhook.secret_env: $%s is empty; set it to the secret the receiver checks signatures with", w.SecretEnv)
	}
	return &httpapi.Webhook{URL: w.URL, Secret: []byte(secret)}, nil
}
