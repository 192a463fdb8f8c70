package approval

import (
	"bufio"
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/shellrisk"
)

// agentCommand is one line of shellrisk/testdata/agent_commands.tsv.
type agentCommand struct {
	line     int
	category string
	source   string
	command  string
}

func readAgentCommands(t *testing.T) []agentCommand {
	t.Helper()
	f, err := os.Open("../shellrisk/testdata/agent_commands.tsv")
	if err != nil {
		t.Fatalf("open corpus: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	var out []agentCommand
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("corpus line %d: want CATEGORY<TAB>SOURCE<TAB>COMMAND", n)
		}
		cmd := parts[2]
		if rest, ok := strings.CutPrefix(cmd, "go:"); ok {
			if cmd, err = strconv.Unquote(rest); err != nil {
				t.Fatalf("corpus line %d: %v", n, err)
			}
		}
		out = append(out, agentCommand{n, parts[0], parts[1], cmd})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	return out
}

// confinedSession is the gate and request of a local session in the default configuration
// (manual, allow_write) with the kernel sandbox on and the network not open, as the engine
// builds them: the workspace, the default deny names, Airlock's files outside the workspace.
func confinedSession(t *testing.T, workspace string) (*Gate, Request) {
	t.Helper()
	state := "/home/user/.local/state/airlock/ws-0123"
	g := newGate(t, defaultConfig(), WithShellContext(shellrisk.Context{
		Workspace: workspace,
		DenyNames: pathpolicy.DefaultDenyNames,
		Protected: []string{state + "/receipts.jsonl", state + "/sessions", state + "/approvals"},
	}))
	tmp := "/tmp/airlock-session-0123"
	return g, Request{Kind: "local", Enforced: true, SecretsHidden: true, Confined: true, TempDir: tmp, Scratch: []string{tmp}}
}

// TestAgentCommandPrecision measures, on commands coding agents really run, how many run
// without a person in a confined local session in the default configuration: inspection
// (reading, searching, git that reads) must run unasked at 99 % or more, and no build or
// test may be judged dangerous.
func TestAgentCommandPrecision(t *testing.T) {
	t.Parallel()
	cmds := readAgentCommands(t)
	if len(cmds) < 500 {
		t.Fatalf("corpus has %d commands, want at least 500", len(cmds))
	}
	g, base := confinedSession(t, "/testbed")
	type tally struct{ total, unasked, dangerous int }
	by := map[string]*tally{}
	var asked, dangerousBuild []string
	for i, c := range cmds {
		r := base
		r.Command = c.command
		r.CallID = "call-" + strconv.Itoa(i)
		d, err := g.Decide(context.Background(), r)
		if err != nil {
			t.Fatalf("line %d: decide: %v", c.line, err)
		}
		tl := by[c.category]
		if tl == nil {
			tl = &tally{}
			by[c.category] = tl
		}
		tl.total++
		if d.Allow {
			tl.unasked++
		}
		if d.Verdict.Risk == shellrisk.RiskDangerous {
			tl.dangerous++
		}
		desc := "line " + strconv.Itoa(c.line) + " " + d.Verdict.Risk.String() + " " + strings.Join(d.Verdict.Codes(), ",") + ": " + strconv.Quote(c.command)
		switch {
		case inspection(c.category) && !d.Allow:
			asked = append(asked, desc)
		case c.category == "build_test" && d.Verdict.Risk == shellrisk.RiskDangerous:
			dangerousBuild = append(dangerousBuild, desc)
		}
	}
	cats := make([]string, 0, len(by))
	for k := range by {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	var insp tally
	for _, k := range cats {
		tl := by[k]
		t.Logf("%-10s %4d commands: %5.1f %% run unasked, %5.1f %% dangerous", k, tl.total,
			pct(tl.unasked, tl.total), pct(tl.dangerous, tl.total))
		if inspection(k) {
			insp.total += tl.total
			insp.unasked += tl.unasked
		}
	}
	t.Logf("inspection (inspect, search, git): %d of %d run unasked (%.1f %%)", insp.unasked, insp.total, pct(insp.unasked, insp.total))
	for _, a := range asked {
		t.Logf("inspection asks: %s", a)
	}
	if pct(insp.unasked, insp.total) < 99 {
		t.Errorf("inspection runs unasked at %.1f %%, want at least 99 %%", pct(insp.unasked, insp.total))
	}
	for _, d := range dangerousBuild {
		t.Errorf("build or test judged dangerous: %s", d)
	}
}

func inspection(category string) bool {
	return category == "inspect" || category == "search" || category == "git"
}

func pct(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}
