package clientconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// codexFeatures are Codex's own shell tool, turned off. (Codex 0.169 ignores
// unified_exec = false, so it is not written: a key that does nothing would mislead.)
var codexFeatures = []string{"shell_tool"}

var tableHeader = regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$`)

// planCodex edits Codex's config.toml as text: the [mcp_servers.airlock] table (and its
// subtables) is replaced whole, [features] gets shell_tool = false, and
// everything else — other servers, comments, order — stays as the user wrote it. [features]
// shell_tool = false drops Codex's own shell tool. The
// result is parsed back and checked before it is offered.
func planCodex(t Target, base string) ([]Change, []string, error) {
	path := filepath.Join(base, ".codex", "config.toml")
	if t.Scope == User && t.CodexHome != "" {
		path = filepath.Join(t.CodexHome, "config.toml")
	}
	old, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if existed {
		var probe map[string]any
		if _, err := toml.Decode(string(old), &probe); err != nil {
			return nil, nil, fmt.Errorf("%s is not valid TOML (%w): fix or move it; nothing was changed", path, err)
		}
	}
	text := editCodex(string(old), t)
	var got struct {
		MCPServers map[string]struct {
			Command        string   `toml:"command"`
			Args           []string `toml:"args"`
			ToolTimeoutSec float64  `toml:"tool_timeout_sec"`
		} `toml:"mcp_servers"`
		Features map[string]any `toml:"features"`
	}
	if _, err := toml.Decode(text, &got); err != nil {
		return nil, nil, fmt.Errorf("%s: the merged config does not parse (%w); nothing was changed", path, err)
	}
	if s := got.MCPServers[ServerName]; s.Command != t.Command || got.Features["shell_tool"] != false {
		return nil, nil, fmt.Errorf("%s: the merged config does not say what was meant; nothing was changed", path)
	}
	notes := []string{"Codex has no config key for its apply_patch edit tool; with its shell tool off, tell it in AGENTS.md to edit with the airlock tools"}
	if t.Scope == Project {
		notes = append(notes, "Codex reads a project's .codex/config.toml only once the project is trusted")
	}
	return []Change{{Path: path, Content: []byte(text), Existed: existed}}, notes, nil
}

func editCodex(old string, t Target) string {
	var kept []string
	skip := false
	featuresAt := -1
	inFeatures := false
	for _, line := range strings.SplitAfter(old, "\n") {
		if line == "" {
			continue
		}
		if m := tableHeader.FindStringSubmatch(line); m != nil {
			name := strings.ReplaceAll(m[1], " ", "")
			skip = name == "mcp_servers."+ServerName || strings.HasPrefix(name, "mcp_servers."+ServerName+".") ||
				name == `mcp_servers."`+ServerName+`"`
			inFeatures = name == "features"
			if skip {
				continue
			}
			kept = append(kept, line)
			if inFeatures && featuresAt < 0 {
				featuresAt = len(kept)
			}
			continue
		}
		if skip {
			continue
		}
		if inFeatures && isKey(line, codexFeatures) {
			continue
		}
		kept = append(kept, line)
	}
	if len(kept) > 0 && !strings.HasSuffix(kept[len(kept)-1], "\n") {
		kept[len(kept)-1] += "\n"
	}
	var feats strings.Builder
	feats.WriteString("# Codex's own shell tool is off: commands go through Airlock (airlock install codex).\n")
	for _, f := range codexFeatures {
		fmt.Fprintf(&feats, "%s = false\n", f)
	}
	if featuresAt >= 0 {
		kept = append(kept[:featuresAt], append([]string{feats.String()}, kept[featuresAt:]...)...)
	}
	var b strings.Builder
	for _, l := range kept {
		b.WriteString(l)
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n\n") {
		b.WriteString("\n")
	}
	if featuresAt < 0 {
		b.WriteString("[features]\n")
		b.WriteString(feats.String())
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "# Airlock runs this agent's commands and file edits (airlock install codex).\n[mcp_servers.%s]\n", ServerName)
	fmt.Fprintf(&b, "command = %s\n", strconv.Quote(t.Command))
	b.WriteString("args = [")
	for i, a := range t.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(a))
	}
	b.WriteString("]\n")
	fmt.Fprintf(&b, "startup_timeout_sec = 30\ntool_timeout_sec = %d\nenabled = true\n", t.ToolTimeoutSec)
	return b.String()
}

func isKey(line string, keys []string) bool {
	s := strings.TrimSpace(line)
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(s, k); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") {
			return true
		}
	}
	return false
}
