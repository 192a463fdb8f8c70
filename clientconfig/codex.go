package clientconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// codexFeatures are Codex's own tools that act outside Airlock, turned off: shell_tool is
// its shell (exec_command, write_stdin, and the apply_patch it intercepts in shell
// commands), view_image reads any image file the model names. Measured with Codex 0.171
// against a scripted model: with both off, the model is offered neither, nor apply_patch.
// (Codex ignores unified_exec = false, so it is not written: a key that does nothing would
// mislead.)
var codexFeatures = []string{"shell_tool", "view_image"}

// codexTopLevel are top-level keys written before the first table: web_search = "disabled"
// drops Codex's hosted web search tool, a fetch outside Airlock's URL guard; sandbox_mode =
// "read-only" keeps Codex's own apply_patch from writing. No key removes apply_patch: for
// model names Codex knows (gpt-5.5) it is offered even with shell_tool off, and under Codex's
// read-only sandbox it is refused ("patch rejected: writing is blocked by read-only
// sandbox"). Airlock's MCP server is not inside Codex's sandbox, so its tools still write.
var codexTopLevel = [][2]string{{"web_search", `"disabled"`}, {"sandbox_mode", `"read-only"`}}

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
	// Codex (0.171) in exec mode declines every elicitation without asking anyone, which
	// would read as a person's denial: Airlock answers Codex with approval_pending instead,
	// and a person decides with airlock approvals.
	t.Args = append(slices.Clip(t.Args), "--elicit=false")
	text := editCodex(string(old), t)
	var got struct {
		MCPServers map[string]struct {
			Command        string   `toml:"command"`
			Args           []string `toml:"args"`
			ToolTimeoutSec float64  `toml:"tool_timeout_sec"`
			ApprovalMode   string   `toml:"default_tools_approval_mode"`
		} `toml:"mcp_servers"`
		WebSearch   string         `toml:"web_search"`
		SandboxMode string         `toml:"sandbox_mode"`
		Features    map[string]any `toml:"features"`
	}
	if _, err := toml.Decode(text, &got); err != nil {
		return nil, nil, fmt.Errorf("%s: the merged config does not parse (%w); nothing was changed", path, err)
	}
	if s := got.MCPServers[ServerName]; s.Command != t.Command || got.Features["shell_tool"] != false ||
		got.Features["view_image"] != false || got.WebSearch != "disabled" || got.SandboxMode != "read-only" || s.ApprovalMode != "approve" {
		return nil, nil, fmt.Errorf("%s: the merged config does not say what was meant; nothing was changed", path)
	}
	notes := []string{"Codex declines MCP elicitations in exec mode without asking anyone, so Airlock asks no question " +
		"through Codex: a call that needs a person comes back approval_pending; answer it with airlock approvals approve|deny ID"}
	if t.Scope == Project {
		notes = append(notes, "Codex reads a project's .codex/config.toml only once the project is trusted")
	}
	agents, err := codexAgentsMD(filepath.Join(filepath.Dir(path), "AGENTS.md"))
	if t.Scope == Project {
		agents, err = codexAgentsMD(filepath.Join(base, "AGENTS.md"))
	}
	if err != nil {
		return nil, nil, err
	}
	notes = append(notes, "Codex has no key that removes its apply_patch tool (models it knows are offered it even with its shell off): "+
		"sandbox_mode = \"read-only\" makes Codex refuse its writes, and "+agents.Path+" tells the model to edit with the airlock tools; "+
		"do not start Codex with --sandbox workspace-write, --full-auto or --dangerously-bypass-approvals-and-sandbox")
	return []Change{{Path: path, Content: []byte(text), Existed: existed}, agents}, notes, nil
}

// agentsBlock is what Airlock writes into Codex's AGENTS.md, between its markers.
const agentsBlock = `<!-- airlock: written by airlock install codex -->
Run commands and edit files only with the airlock tools (terminal, read_file, write_file,
patch, search_files). Do not use apply_patch: Codex refuses its writes here, and Airlock keeps
the receipt of every change.
<!-- /airlock -->
`

// codexAgentsMD puts agentsBlock into the AGENTS.md at path: replaced between its markers
// when there, appended otherwise; the rest of the file stays as it is.
func codexAgentsMD(path string) (Change, error) {
	old, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Change{}, fmt.Errorf("read %s: %w", path, err)
	}
	text := string(old)
	begin, end := "<!-- airlock:", "<!-- /airlock -->\n"
	if i := strings.Index(text, begin); i >= 0 {
		if j := strings.Index(text[i:], end); j >= 0 {
			return Change{Path: path, Content: []byte(text[:i] + agentsBlock + text[i+j+len(end):]), Existed: existed}, nil
		}
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if text != "" {
		text += "\n"
	}
	return Change{Path: path, Content: []byte(text + agentsBlock), Existed: existed}, nil
}

// editCodex rewrites a Codex config.toml for Airlock: the user's own lines kept, except
// Airlock's server table, the top-level keys and the features Airlock sets, which are
// written again — the top-level keys before the first table, the features in the user's
// [features] table (or a new one), Airlock's server last.
func editCodex(old string, t Target) string {
	kept, featuresAt, firstTableAt := keepCodexLines(old)
	var feats strings.Builder
	feats.WriteString("# Codex's own shell and image tools are off: commands and reads go through Airlock (airlock install codex).\n")
	for _, f := range codexFeatures {
		fmt.Fprintf(&feats, "%s = false\n", f)
	}
	if featuresAt >= 0 {
		kept = append(kept[:featuresAt], append([]string{feats.String()}, kept[featuresAt:]...)...)
	}
	// Top-level keys must stand before the first table: after the user's own.
	var top strings.Builder
	top.WriteString("# Codex's own web search is off and its own writes (apply_patch) refused: fetches and edits go\n" +
		"# through Airlock (airlock install codex). --sandbox workspace-write or --full-auto would undo the second.\n")
	for _, kv := range codexTopLevel {
		fmt.Fprintf(&top, "%s = %s\n", kv[0], kv[1])
	}
	if firstTableAt < 0 {
		firstTableAt = len(kept)
	}
	if firstTableAt > 0 && !strings.HasSuffix(kept[firstTableAt-1], "\n") {
		kept[firstTableAt-1] += "\n"
	}
	if firstTableAt < len(kept) {
		top.WriteString("\n")
	}
	kept = slices.Insert(kept, firstTableAt, top.String())
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
	writeCodexServer(&b, t)
	return b.String()
}

// keepCodexLines returns the lines of a Codex config that stay, where the features Airlock
// sets go (just after the [features] header, -1 without one) and where the first table
// starts (-1 without one).
func keepCodexLines(old string) (kept []string, featuresAt, firstTableAt int) {
	featuresAt, firstTableAt = -1, -1
	skip, inFeatures, topLevel := false, false, true
	topKeys := make([]string, len(codexTopLevel))
	for i, kv := range codexTopLevel {
		topKeys[i] = kv[0]
	}
	for _, line := range strings.SplitAfter(old, "\n") {
		if line == "" {
			continue
		}
		if topLevel && isKey(line, topKeys) {
			continue // written again, first in the file
		}
		if m := tableHeader.FindStringSubmatch(line); m != nil {
			if topLevel {
				firstTableAt = len(kept)
			}
			topLevel = false
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
		if skip || inFeatures && isKey(line, codexFeatures) {
			continue
		}
		kept = append(kept, line)
	}
	if len(kept) > 0 && !strings.HasSuffix(kept[len(kept)-1], "\n") {
		kept[len(kept)-1] += "\n"
	}
	return kept, featuresAt, firstTableAt
}

// writeCodexServer writes Airlock's [mcp_servers.airlock] table.
func writeCodexServer(b *strings.Builder, t Target) {
	fmt.Fprintf(b, "# Airlock runs this agent's commands and file edits (airlock install codex).\n[mcp_servers.%s]\n", ServerName)
	fmt.Fprintf(b, "command = %s\n", strconv.Quote(t.Command))
	b.WriteString("args = [")
	for i, a := range t.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(a))
	}
	b.WriteString("]\n")
	fmt.Fprintf(b, "startup_timeout_sec = 30\ntool_timeout_sec = %d\nenabled = true\n", t.ToolTimeoutSec)
	// Airlock is the gate: Codex's own MCP approval has no person in exec mode and refuses
	// every tool not marked read-only ("requires approval, but approval policy is never").
	b.WriteString("default_tools_approval_mode = \"approve\"\n")
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
