package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	register(command{name: "approvals", summary: "list, approve or deny calls waiting for a person (from another terminal)", run: runApprovals})
}

const approvalsUsage = "approvals list [--all] [--json] | show ID | approve ID [--scope once|session] | deny ID [--message TEXT]  [--config FILE]"

func runApprovals(args []string, s stdio) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(s.out, "Usage: airlock %s\n\nAnswers the questions `airlock mcp` could not get answered in its client; the waiting\n"+
			"call gets the answer on its next approval_wait (or the same call again). An answer is final.\n", approvalsUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	verb := args[0]
	var cfgFile, scope, message string
	var all, asJSON bool
	fs := newFlagSet("approvals "+verb, approvalsUsage, s)
	fs.StringVar(&cfgFile, "config", os.Getenv("AIRLOCK_CONFIG"), "config file: the same one the MCP server runs with (env AIRLOCK_CONFIG)")
	switch verb {
	case "list":
		fs.BoolVar(&all, "all", false, "also answered, expired and used approvals")
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "show":
	case "approve":
		fs.StringVar(&scope, "scope", "once", "once: this call; session: this exact command for the rest of the session")
	case "deny":
		fs.StringVar(&message, "message", "", "said to the agent with the denial")
	default:
		fmt.Fprintf(s.err, "airlock approvals: unknown verb %q\nUsage: airlock %s\n", verb, approvalsUsage)
		return 2
	}
	// The ID may come before or after the flags.
	rest := args[1:]
	var id string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		id, rest = rest[0], rest[1:]
	}
	if code, done := parseFlags(fs, rest); done {
		return code
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	}
	if verb != "list" && id == "" {
		return fail(s, fmt.Errorf("approvals %s: an approval ID is required (airlock approvals list shows them)", verb))
	}
	if scope != "" && scope != "once" && scope != "session" {
		return fail(s, fmt.Errorf("approvals approve: --scope: expected once or session, got %q", scope))
	}
	cfg, err := configs.Load(cfgFile)
	if err != nil {
		return fail(s, err)
	}
	store, err := pending.Open(cfg.ApprovalsDir())
	if err != nil {
		return fail(s, err)
	}
	switch verb {
	case "list":
		recs, err := store.List(!all)
		if err != nil {
			return fail(s, err)
		}
		if asJSON {
			enc := json.NewEncoder(s.out)
			enc.SetIndent("", "  ")
			if recs == nil {
				recs = []pending.Record{}
			}
			_ = enc.Encode(recs)
			return 0
		}
		if len(recs) == 0 {
			fmt.Fprintln(s.out, "no approvals waiting")
			return 0
		}
		tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tTOOL\tRISK\tEXPIRES\tCALL")
		for _, r := range recs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, state(r), r.Tool, r.Risk,
				time.Until(r.ExpiresAt).Round(time.Second), oneLine(r.Summary, 80))
		}
		_ = tw.Flush()
		return 0
	case "show":
		r, err := store.Get(id)
		if err != nil {
			return fail(s, err)
		}
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
		return 0
	}
	r, err := store.Decide(id, verb == "approve", pending.Scope(scope), "cli", message)
	if err != nil {
		return fail(s, err)
	}
	fmt.Fprintf(s.out, "%s %s", r.ID, r.State)
	if r.Scope != "" {
		fmt.Fprintf(s.out, " (%s)", r.Scope)
	}
	fmt.Fprintf(s.out, ": %s %s\n", r.Tool, oneLine(r.Summary, 80))
	return 0
}

func state(r pending.Record) string {
	if r.Consumed {
		return string(r.State) + ", used"
	}
	return string(r.State)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}
