package main

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/receipt"
)

func init() {
	register(command{name: "receipts", summary: "verify or show a receipt ledger", run: runReceipts})
}

func runReceipts(args []string, s stdio) int {
	usage := func() {
		fmt.Fprintln(s.err, "Usage: airlock receipts verify FILE\n       airlock receipts show FILE")
	}
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		usage()
		return 0
	}
	if len(args) != 2 {
		usage()
		return 2
	}
	switch args[0] {
	case "verify":
		f, err := os.Open(args[1])
		if err != nil {
			return fail(s, err)
		}
		n, head, err := receipt.VerifyHead(f)
		_ = f.Close()
		var ve *receipt.VerifyError
		switch {
		case errors.As(err, &ve):
			fmt.Fprintf(s.err, "airlock: %s: chain broken at line %d: %s (%d good lines before it)\n", args[1], ve.Line, ve.Reason, n)
			return 1
		case err != nil:
			return fail(s, err)
		}
		// The chain has no secret key: keep the head elsewhere to catch a rewrite too.
		fmt.Fprintf(s.out, "%s: %d lines, chain intact, head %s\n", args[1], n, head)
		return 0
	case "show":
		f, err := os.Open(args[1])
		if err != nil {
			return fail(s, err)
		}
		defer f.Close()
		lines, rerr := receipt.ReadAll(f)
		tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tTIME\tEVENT\tCALL\tTOOL\tDECISION\tREASON\tDECIDED BY\tDISPATCHED\tHANDLER\tOUTCOME\tEXIT")
		for _, ln := range lines {
			r := ln.Receipt
			if r == nil {
				fmt.Fprintf(tw, "%d\t%s\t%s\t\t\t\t%s\t\t\t\t\t\n", ln.Seq, ln.Time.Format("15:04:05.000"), ln.Event, ln.Note)
				continue
			}
			exit := ""
			if r.ExitCode != nil {
				exit = fmt.Sprint(*r.ExitCode)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%v\t%s\t%s\n", ln.Seq, ln.Time.Format("15:04:05.000"), ln.Event,
				r.CallID, r.ToolName, r.Decision, r.ReasonCode, r.DecidedBy, r.DispatchStarted, r.HandlerStarted, r.Outcome, exit)
		}
		_ = tw.Flush()
		if rerr != nil {
			fmt.Fprintf(s.err, "airlock: %s: %v\n", args[1], rerr)
			return 1
		}
		return 0
	default:
		usage()
		return 2
	}
}
