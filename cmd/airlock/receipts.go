package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/receipt"
)

func init() {
	register(command{name: "receipts", summary: "verify or show a receipt ledger", run: runReceipts})
}

const receiptsUsage = `Usage: airlock receipts verify FILE
       airlock receipts show FILE

verify checks the hash chain (exit 0 when intact, 1 naming the first bad line); show prints
one row per ledger event, with any control character of a field escaped.
`

func runReceipts(args []string, s stdio) int {
	if len(args) == 0 {
		fmt.Fprint(s.err, receiptsUsage)
		return 2
	}
	if isHelp(args[0]) {
		fmt.Fprint(s.out, receiptsUsage)
		return 0
	}
	sub := args[0]
	if sub != "verify" && sub != "show" {
		fmt.Fprintf(s.err, "airlock receipts: unknown subcommand %q\n\n%s", sub, receiptsUsage)
		return 2
	}
	fs := newFlagSet("receipts "+sub, "receipts "+sub+" FILE", s)
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	file := fs.Arg(0)
	if sub == "verify" {
		return verifyReceipts(file, s)
	}
	return showReceipts(file, s)
}

func verifyReceipts(file string, s stdio) int {
	f, err := os.Open(file)
	if err != nil {
		return fail(s, err)
	}
	n, head, err := receipt.VerifyHead(f)
	_ = f.Close()
	var ve *receipt.VerifyError
	switch {
	case errors.As(err, &ve):
		fmt.Fprintf(s.err, "airlock: %s: chain broken at line %d: %s (%d good lines before it)\n", printable(file), ve.Line, printable(ve.Reason), n)
		return 1
	case err != nil:
		return fail(s, err)
	}
	// The chain has no secret key: keep the head elsewhere to catch a rewrite too.
	fmt.Fprintf(s.out, "%s: %d lines, chain intact, head %s\n", printable(file), n, head)
	return 0
}

func showReceipts(file string, s stdio) int {
	f, err := os.Open(file)
	if err != nil {
		return fail(s, err)
	}
	defer f.Close()
	lines, rerr := receipt.ReadAll(f)
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	row := func(fields ...string) {
		for i, v := range fields {
			fields[i] = printable(v)
		}
		fmt.Fprintln(tw, strings.Join(fields, "\t"))
	}
	fmt.Fprintln(tw, "SEQ\tTIME\tEVENT\tCALL\tTOOL\tDECISION\tREASON\tDECIDED BY\tDISPATCHED\tHANDLER\tOUTCOME\tEXIT")
	for _, ln := range lines {
		seq, at := strconv.FormatInt(ln.Seq, 10), ln.Time.Format("15:04:05.000")
		r := ln.Receipt
		if r == nil {
			row(seq, at, ln.Event, "", "", "", ln.Note, "", "", "", "", "")
			continue
		}
		exit := ""
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		row(seq, at, ln.Event, r.CallID, r.ToolName, r.Decision, r.ReasonCode, r.DecidedBy,
			strconv.FormatBool(r.DispatchStarted), strconv.FormatBool(r.HandlerStarted), string(r.Outcome), exit)
	}
	_ = tw.Flush()
	if rerr != nil {
		fmt.Fprintf(s.err, "airlock: %s: %s\n", printable(file), printable(rerr.Error()))
		return 1
	}
	return 0
}

// printable returns v as it is when every character of it prints as itself, and otherwise
// Go-quoted ("a\nb", "\x1b[2K", "\u202e"), so that a field from the ledger can neither start a
// row of its own, move the cursor, nor reorder what is shown. A value that itself starts with
// a quote is quoted too, so that quoting is never ambiguous.
func printable(v string) string {
	if strings.HasPrefix(v, `"`) || !utf8.ValidString(v) {
		return strconv.Quote(v)
	}
	for _, r := range v {
		if r != ' ' && (!unicode.IsPrint(r) || unicode.Is(unicode.Cf, r)) {
			return strconv.Quote(v)
		}
	}
	return v
}
