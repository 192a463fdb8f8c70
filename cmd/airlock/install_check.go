package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/clientconfig"
	"github.com/airlock-dev/airlock/clientprobe"
)

// clientBinary is the client's binary: the one named, or the client's command on PATH.
func clientBinary(client, named string) string {
	if named != "" {
		return named
	}
	name := map[string]string{clientconfig.ClaudeCode: "claude", clientconfig.Codex: "codex"}[client]
	if name == "" {
		return ""
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

// probeClaudeTools runs the installed Claude Code once, with a throwaway HOME, against a
// loopback probe, and returns its built-in tools; nil when it cannot be run.
func probeClaudeTools(named, dir string) []string {
	bin := clientBinary(clientconfig.ClaudeCode, named)
	if bin == "" {
		return nil
	}
	home, err := os.MkdirTemp("", "airlock-probe-home-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(home)
	tools, err := clientprobe.ClaudeTools(context.Background(), bin, dir, home)
	if err != nil {
		return nil
	}
	return tools
}

// codexOwnTools are Codex's own tools that act outside Airlock.
var codexOwnTools = []string{"shell", "local_shell", "exec_command", "write_stdin", "apply_patch", "view_image", "web_search"}

// checkInstall runs the client as the user would and reports what it will do with Airlock.
func checkInstall(t clientconfig.Target, named string, s stdio) int {
	bin := clientBinary(t.Client, named)
	if bin == "" {
		return fail(s, fmt.Errorf("install --check: %s: no client binary found on PATH (give --client-bin)", t.Client))
	}
	var c checker
	switch t.Client {
	case clientconfig.ClaudeCode:
		c.claude(t, bin)
	case clientconfig.Codex:
		c.codex(t, bin)
	default:
		return fail(s, fmt.Errorf("install --check: %s: only claude-code and codex can be run to check", t.Client))
	}
	for _, l := range c.lines {
		fmt.Fprintln(s.out, l)
	}
	if c.bad {
		return 1
	}
	return 0
}

type checker struct {
	lines []string
	bad   bool
}

func (c *checker) say(ok bool, format string, args ...any) {
	mark := "ok  "
	if !ok {
		mark, c.bad = "FAIL", true
	}
	c.lines = append(c.lines, mark+" "+fmt.Sprintf(format, args...))
}

func (c *checker) claude(t clientconfig.Target, bin string) {
	out, err := runClientCmd(t.ProjectDir, bin, "mcp", "list")
	connected := err == nil && lineWith(out, clientconfig.ServerName+":", "Connected")
	c.say(connected, "server: claude mcp list shows %s connected", clientconfig.ServerName)
	trusted := claudeTrusted(t.Home, t.ProjectDir)
	c.say(trusted || t.Scope != clientconfig.Project, "folder %s trusted by Claude Code: %v "+
		"(project scope needs it: start claude in the folder once and accept the trust dialog)", t.ProjectDir, trusted)
	prefix := "mcp__" + clientconfig.ServerName + "__"
	tools, err := probeTools(prefix, func() ([]string, error) {
		return clientprobe.ClaudeTools(context.Background(), bin, t.ProjectDir, t.Home)
	})
	if err != nil {
		c.say(false, "tools: %v", err)
		return
	}
	c.tools(tools, prefix, clientconfig.ClaudeOwnTools)
}

// probeTools runs a client's probe until the tools it offers its model include one with
// prefix, three times at most, and returns the last tools offered. A client may send its
// first model request before its MCP servers are up (both Claude Code and Codex did, on
// this 2-core machine at load 35-57, where airlock mcp took over half a second to answer
// initialize): the check is of the configuration, so it asks again.
func probeTools(prefix string, probe func() ([]string, error)) ([]string, error) {
	var tools []string
	for range 3 {
		var err error
		if tools, err = probe(); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(tools, func(n string) bool { return strings.HasPrefix(n, prefix) }) {
			break
		}
	}
	return tools, nil
}

func (c *checker) codex(t clientconfig.Target, bin string) {
	out, err := runClientCmd(t.ProjectDir, bin, "mcp", "list")
	c.say(err == nil && lineWith(out, clientconfig.ServerName+" ", "enabled"), "server: codex mcp list shows %s enabled", clientconfig.ServerName)
	codexHome := t.CodexHome
	if codexHome == "" {
		codexHome = filepath.Join(t.Home, ".codex")
	}
	prefix := "mcp__" + clientconfig.ServerName + "."
	tools, err := probeTools(prefix, func() ([]string, error) {
		return clientprobe.CodexTools(context.Background(), bin, t.ProjectDir, t.Home, codexHome)
	})
	if err != nil {
		c.say(false, "tools: %v", err)
		return
	}
	c.tools(tools, prefix, codexOwnTools)
}

// tools reports Airlock's tools offered to the model, and any of the client's own left on.
func (c *checker) tools(tools []string, prefix string, own []string) {
	var ours, left []string
	for _, name := range tools {
		if strings.HasPrefix(name, prefix) {
			ours = append(ours, strings.TrimPrefix(name, prefix))
		} else if slices.Contains(own, name) {
			left = append(left, name)
		}
	}
	c.say(len(ours) > 0, "airlock tools offered to the model: %s", strings.Join(ours, ", "))
	c.say(len(left) == 0, "the client's own shell, file and fetch tools off (still on: %s)", strings.Join(left, ", "))
}

func claudeTrusted(home, dir string) bool {
	b, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		return false
	}
	var st struct {
		Projects map[string]struct {
			Trusted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	if json.Unmarshal(b, &st) != nil {
		return false
	}
	return st.Projects[dir].Trusted
}

func runClientCmd(dir, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientprobe.ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lineWith(out, prefix, word string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) && strings.Contains(l, word) {
			return true
		}
	}
	return false
}
