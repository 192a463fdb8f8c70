package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/tool"
)

// Availability says whether a tool is listed and, when not, why.
type Availability struct {
	Name    string `json:"name"`
	Toolset string `json:"toolset,omitempty"`
	Listed  bool   `json:"listed"`
	Why     string `json:"why,omitempty"`
}

// Toolsets are the toolsets Airlock knows; [tools] enabled picks among them.
var Toolsets = []string{"files", "terminal", "jobs", "web"}

// Check decides which registered tools a server lists: the tool's toolset must be enabled
// (nil enables all), allowed_tools (when not empty) must name it, and the environment must
// meet its needs — each program need is looked up on the environment's PATH with one
// command, so a tool whose program is missing from the image is not offered at all.
func Check(ctx context.Context, reg *tool.Registry, env backend.Environment, toolsets, allowed []string) []Availability {
	var out []Availability
	found := map[string]bool{}
	for _, name := range reg.Names() {
		t, _ := reg.Lookup(name)
		a := Availability{Name: name, Toolset: t.Toolset, Listed: true}
		switch {
		case toolsets != nil && t.Toolset != "" && !slices.Contains(toolsets, t.Toolset):
			a.Listed, a.Why = false, fmt.Sprintf("toolset %q is not enabled ([tools] enabled)", t.Toolset)
		case len(allowed) > 0 && !slices.Contains(allowed, name):
			a.Listed, a.Why = false, "not in [policy] allowed_tools"
		default:
			if why := unmet(ctx, env, t.Needs, found); why != "" {
				a.Listed, a.Why = false, why
			}
		}
		out = append(out, a)
	}
	return out
}

// unmet returns why the first unmet need is unmet, or "".
func unmet(ctx context.Context, env backend.Environment, needs []tool.Need, found map[string]bool) string {
	for _, n := range needs {
		if len(n.Programs) > 0 && !anyProgram(ctx, env, n.Programs, found) {
			return fmt.Sprintf("none of %s is on the %s environment's PATH (%s)", strings.Join(n.Programs, ", "), env.Describe().Kind, n.Why)
		}
		if n.Capability != "" && !hasCapability(env.Describe().Capabilities, n.Capability) {
			return fmt.Sprintf("the %s backend lacks %s (%s)", env.Describe().Kind, n.Capability, n.Why)
		}
	}
	return ""
}

func anyProgram(ctx context.Context, env backend.Environment, progs []string, found map[string]bool) bool {
	key := strings.Join(progs, "|")
	if ok, seen := found[key]; seen {
		return ok
	}
	var script strings.Builder
	for i, p := range progs {
		if i > 0 {
			script.WriteString(" || ")
		}
		// Program names come from tool definitions, never from a model.
		fmt.Fprintf(&script, "command -v '%s' >/dev/null 2>&1", p)
	}
	res, err := env.Exec(ctx, backend.Request{Command: script.String(), Timeout: 20 * time.Second})
	ok := err == nil && res.ExitCode == 0 && !res.TimedOut
	found[key] = ok
	return ok
}

func hasCapability(c backend.Capabilities, name string) bool {
	switch name {
	case "filesystem_isolation":
		return c.FilesystemIsolation
	case "network_isolation":
		return c.NetworkIsolation
	case "process_tree_kill":
		return c.ProcessTreeKill
	case "resident_helper":
		return c.ResidentHelper
	}
	return false
}
