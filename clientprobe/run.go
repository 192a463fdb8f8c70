package clientprobe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ProbeTimeout bounds one run of a client against the probe.
const ProbeTimeout = 60 * time.Second

// ClaudeTools runs Claude Code (bin) once headless against a probe in dir and returns the
// tools it offers its model. home is the HOME it runs with: a throwaway directory shows the
// client's built-in tools, the user's own what their settings leave of them.
func ClaudeTools(ctx context.Context, bin, dir, home string) ([]string, error) {
	return probe(ctx, func(url string) *exec.Cmd {
		cmd := exec.Command(bin, "-p", "list your tools", "--output-format", "json")
		cmd.Env = append(baseEnv(home), "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=airlock-probe",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1")
		cmd.Dir = dir
		return cmd
	})
}

// CodexTools runs `codex exec` (bin) once against a probe in dir, with the probe as its model
// provider given on the command line, and returns the tools it offers its model. codexHome
// is its CODEX_HOME.
func CodexTools(ctx context.Context, bin, dir, home, codexHome string) ([]string, error) {
	return probe(ctx, func(url string) *exec.Cmd {
		cmd := exec.Command(bin, "exec", "--skip-git-repo-check",
			"-c", `model="airlock-probe"`, "-c", `model_provider="airlockprobe"`,
			"-c", `model_providers.airlockprobe={name="airlockprobe", base_url="`+url+`/v1", wire_api="responses", env_key="AIRLOCK_PROBE_KEY"}`,
			"list your tools")
		cmd.Env = append(baseEnv(home), "CODEX_HOME="+codexHome, "AIRLOCK_PROBE_KEY=airlock-probe")
		cmd.Dir = dir
		return cmd
	})
}

func probe(ctx context.Context, command func(url string) *exec.Cmd) ([]string, error) {
	var tools []string
	got := make(chan struct{}, 1)
	srv, err := Start(func(r Request) Reply {
		if tools == nil {
			tools = append([]string{}, r.Tools...)
			got <- struct{}{}
		}
		return Reply{Text: "done"}
	})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	cmd := command(srv.URL)
	cmd.Stdin = nil
	out, err := runContext(ctx, cmd)
	select {
	case <-got:
		return tools, nil
	default:
	}
	if err == nil {
		err = errors.New("it sent no model request")
	}
	return nil, fmt.Errorf("probe %s: %w: %s", filepath.Base(cmd.Path), err, tail(out))
}

func runContext(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env, c.Dir, c.Stdin = cmd.Env, cmd.Dir, nil
	c.WaitDelay = 5 * time.Second
	return c.CombinedOutput()
}

// baseEnv is the environment a probed client runs with: the user's, less what points a
// client at a model service or carries a key, with HOME set.
func baseEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "CLAUDE_") ||
			k == "CODEX_HOME" || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return s
}
