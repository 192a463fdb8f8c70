package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	register(command{name: "approvals", summary: "list, approve or deny calls waiting for a person (from another terminal)", run: runApprovals})
}

const approvalsUsage = "approvals list [--all] [--json] | show ID [--json] | approve ID [--scope once|session] | deny ID [--message TEXT]  [--config FILE]"

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
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "approve":
		fs.StringVar(&scope, "scope", "once", "once: this call; session: also what the approval's \"for the session\" line says (airlock approvals show ID), for the rest of the session")
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
		return listApprovals(s, store, all, asJSON)
	case "show":
		return showApproval(s, store, id, asJSON)
	}
	return decideApproval(s, store, id, verb == "approve", pending.Scope(scope), message)
}

// listApprovals prints the waiting approvals (all with all) as a table or JSON; every field
// a command could put escape sequences in is escaped.
func listApprovals(s stdio, store *pending.Store, all, asJSON bool) int {
	recs, err := store.List(!all)
	if err != nil {
		return fail(s, err)
	}
	if asJSON {
		if recs == nil {
			recs = []pending.Record{}
		}
		printJSON(s.out, recs)
		return 0
	}
	if len(recs) == 0 {
		fmt.Fprintln(s.out, "no approvals waiting")
		return 0
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTOOL\tRISK\tEXPIRES\tCALL")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, state(r), pending.Escape(r.Tool), pending.Escape(r.Risk),
			time.Until(r.ExpiresAt).Round(time.Second), oneLine(r.Summary, 80))
	}
	_ = tw.Flush()
	return 0
}

// showApproval prints one approval whole: what the person is asked and its state.
func showApproval(s stdio, store *pending.Store, id string, asJSON bool) int {
	r, err := store.Get(id)
	if err != nil {
		return fail(s, err)
	}
	if asJSON {
		printJSON(s.out, r)
		return 0
	}
	fmt.Fprintf(s.out, "%sstate: %s", r.Text(), state(r))
	if r.DecidedBy != "" {
		fmt.Fprintf(s.out, " by %s", pending.Escape(r.DecidedBy))
	}
	fmt.Fprintln(s.out)
	return 0
}

// decideApproval answers one approval and says what the answer covers.
func decideApproval(s stdio, store *pending.Store, id string, approve bool, scope pending.Scope, message string) int {
	r, err := store.Decide(id, approve, scope, "cli", message)
	if err != nil {
		return fail(s, err)
	}
	fmt.Fprintf(s.out, "%s %s", r.ID, r.State)
	if r.Scope != "" {
		fmt.Fprintf(s.out, " (%s)", r.Scope)
	}
	fmt.Fprintf(s.out, ": %s %s\n", pending.Escape(r.Tool), oneLine(r.Summary, 80))
	if r.Scope == pending.Session {
		fmt.Fprintf(s.out, "for the rest of the session this also runs without asking: %s\n", pending.Escape(r.SessionCovers))
	}
	return 0
}

func state(r pending.Record) string {
	if r.Consumed {
		return string(r.State) + ", used"
	}
	return string(r.State)
}

// oneLine shortens an agent's text to n characters for a table row, escaped: its line
// breaks and escape sequences never reach the terminal raw.
func oneLine(s string, n int) string {
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return pending.Escape(s)
}

// printJSON prints v as indented JSON with every character a terminal could act on
// escaped: encoding/json leaves DEL, the C1 controls and bidi overrides raw.
func printJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	var out strings.Builder
	for _, r := range string(b) {
		if r >= 0x7f && (!unicode.IsPrint(r) || unicode.Is(unicode.Cf, r)) {
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
				continue
			}
			fmt.Fprintf(&out, `\u%04x`, r)
			continue
		}
		out.WriteRune(r)
	}
	fmt.Fprintln(w, out.String())
}
