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

const receiptsUsage = `Usage: airlock receipts verify FILE...
       airlock receipts show FILE...

verify checks the hash chain (exit 0 when intact, 1 naming the first bad line) and lists the
ledger_continued events where the ledger moved to a new file because its file was deleted or
replaced; a file that continues the one named before it must take its chain over. show
prints one row per ledger event, with any control character of a field escaped.
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
	fs := newFlagSet("receipts "+sub, "receipts "+sub+" FILE...", s)
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	if sub == "verify" {
		return verifyReceipts(fs.Args(), s)
	}
	code := 0
	for _, file := range fs.Args() {
		if c := showReceipts(file, s); c != 0 {
			code = c
		}
	}
	return code
}

// verifyReceipts checks each file's chain and, where a file continues another (its first
// line a ledger_continued event), that it takes over the chain of the file named before it.
func verifyReceipts(files []string, s stdio) int {
	var before *receipt.Chain
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return fail(s, err)
		}
		c, err := receipt.VerifyChain(f)
		_ = f.Close()
		var ve *receipt.VerifyError
		switch {
		case errors.As(err, &ve):
			fmt.Fprintf(s.err, "airlock: %s: chain broken at line %d: %s (%d good lines before it)\n", printable(file), ve.Line, printable(ve.Reason), c.Lines)
			return 1
		case err != nil:
			return fail(s, err)
		}
		if before != nil && c.StartSeq > 1 && (c.StartSeq != before.LastSeq+1 || c.StartPrev != before.Head) {
			fmt.Fprintf(s.err, "airlock: %s continues a chain at sequence %d that does not follow the head of the file before it (sequence %d)\n",
				printable(file), c.StartSeq, before.LastSeq)
			return 1
		}
		// The chain has no secret key: keep the head elsewhere to catch a rewrite too.
		fmt.Fprintf(s.out, "%s: %d lines, chain intact, head %s\n", printable(file), c.Lines, c.Head)
		if c.StartSeq > 1 {
			fmt.Fprintf(s.out, "  continues a chain from sequence %d (previous hash %s) begun in another file\n", c.StartSeq, c.StartPrev)
		}
		for _, ln := range c.Continued {
			fmt.Fprintf(s.out, "  %s at sequence %d, %s: %s\n", ln.Event, ln.Seq, ln.Time.Format("2006-01-02T15:04:05Z07:00"), printable(ln.Note))
		}
		before = &c
	}
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
	fmt.Fprintln(tw, "SEQ\tTIME\tEVENT\tCALL\tTOOL\tDECISION\tREASON\tDECIDED BY\tDISPATCHED\tHANDLER\tOUTCOME\tEXIT\tCLIENT\tCLIENT CALL")
	for _, ln := range lines {
		seq, at := strconv.FormatInt(ln.Seq, 10), ln.Time.Format("15:04:05.000")
		r := ln.Receipt
		if r == nil {
			row(seq, at, ln.Event, "", "", "", ln.Note, "", "", "", "", "", "", "")
			continue
		}
		exit := ""
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		client, clientCall := "", ""
		if c := r.Client; c != nil {
			client, clientCall = strings.TrimSuffix(c.Name+" "+c.Version, " "), c.CallID
			if c.Caller != "" {
				client = strings.TrimPrefix(client+" (caller "+c.Caller+")", " ")
			}
		}
		row(seq, at, ln.Event, r.CallID, r.ToolName, r.Decision, r.ReasonCode, r.DecidedBy,
			strconv.FormatBool(r.DispatchStarted), strconv.FormatBool(r.HandlerStarted), string(r.Outcome), exit, client, clientCall)
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
