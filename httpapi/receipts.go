package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/receipt"
)

// The receipts API reads the ledger file itself, as `airlock receipts` does: the file is
// the record (other processes append to it too), so there is no second copy to drift.
// A token sees the lines whose receipt names it as the caller (receipt.Client.Caller,
// which the server sets on every call it runs) and no others.

// Codes of the receipts API.
// (CodeInvalidQuery, a query parameter that does not parse, is declared with the others in
// errors.go.)
const CodeLedgerError = "ledger_error"

func init() { Codes = append(Codes, CodeLedgerError) }

// Receipt page sizes.
const (
	defaultReceiptPage = 100
	maxReceiptPage     = 1000
)

// ReceiptPage is one page of GET /v1/receipts, newest first. NextCursor, when set, is
// the cursor of the next (older) page.
type ReceiptPage struct {
	Receipts   []receipt.Line `json:"receipts"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// Verification is the answer of POST /v1/receipts/verify: the ledger's whole chain
// checked, line by line, by [receipt.VerifyChain].
type Verification struct {
	OK    bool   `json:"ok"`
	Lines int    `json:"lines"`
	Head  string `json:"head"`
	// BadLine and Problem name the first line that does not verify.
	BadLine int    `json:"bad_line,omitempty"`
	Problem string `json:"problem,omitempty"`
}

type receiptFilter struct {
	caller, session, tool, decision, event string
}

func (f receiptFilter) match(ln receipt.Line) bool {
	r := ln.Receipt
	return r != nil && r.Client != nil && r.Client.Caller == f.caller &&
		(f.session == "" || r.SessionID == f.session) && (f.tool == "" || r.ToolName == f.tool) &&
		(f.decision == "" || r.Decision == f.decision) && (f.event == "" || ln.Event == f.event)
}

// listReceipts is GET /v1/receipts?session=&tool=&decision=&event=&limit=&cursor=, or with
// follow=1 an event stream of each new matching line ("receipt" events), from after=SEQ
// or from now.
func (s *Server) listReceipts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := receiptFilter{caller: Caller(r.Context()), session: q.Get("session"), tool: q.Get("tool"), decision: q.Get("decision"), event: q.Get("event")}
	limit, err := intParam(q.Get("limit"), defaultReceiptPage, 1, maxReceiptPage)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidQuery, "limit: "+err.Error())
		return
	}
	cursor, err := intParam(q.Get("cursor"), 0, 1, 1<<62)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidQuery, "cursor: "+err.Error())
		return
	}
	if isFollow(r) {
		after, err := intParam(q.Get("after"), -1, 0, 1<<62)
		if err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidQuery, "after: "+err.Error())
			return
		}
		s.followReceipts(w, r, f, int64(after))
		return
	}
	lines, _, err := s.readLedger(0)
	if err != nil {
		writeError(w, http.StatusInternalServerError, CodeLedgerError, err.Error())
		return
	}
	page := ReceiptPage{Receipts: []receipt.Line{}}
	for i := len(lines) - 1; i >= 0; i-- {
		ln := lines[i]
		if (cursor > 0 && ln.Seq >= int64(cursor)) || !f.match(ln) {
			continue
		}
		if len(page.Receipts) == limit {
			page.NextCursor = strconv.FormatInt(page.Receipts[limit-1].Seq, 10)
			break
		}
		page.Receipts = append(page.Receipts, ln)
	}
	writeJSON(w, http.StatusOK, page)
}

// followReceipts streams matching lines with a sequence number above after (-1: from the
// ledger's end now), reading what was appended since, whoever appended it.
func (s *Server) followReceipts(w http.ResponseWriter, r *http.Request, f receiptFilter, after int64) {
	lines, off, err := s.readLedger(0)
	if err != nil {
		writeError(w, http.StatusInternalServerError, CodeLedgerError, err.Error())
		return
	}
	ev := startEvents(w)
	if after >= 0 {
		for _, ln := range lines {
			if ln.Seq > after && f.match(ln) {
				ev.send("receipt", ln)
			}
		}
	}
	t := time.NewTicker(followPoll)
	defer t.Stop()
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if s.draining.Load() {
			return // as followApprovals: shutdown does not wait on a stream
		}
		var more []receipt.Line
		more, off, err = s.readLedger(off)
		if err != nil {
			ev.send("error", errorBody(CodeLedgerError, err.Error()))
			return
		}
		for _, ln := range more {
			if f.match(ln) {
				ev.send("receipt", ln)
				quiet = time.Now()
			}
		}
		if time.Since(quiet) > keepaliveEvery {
			ev.comment("keepalive")
			quiet = time.Now()
		}
	}
}

// readLedger parses the ledger's whole lines from byte offset from on and returns the
// offset after the last whole line. A ledger not written yet is empty.
func (s *Server) readLedger(from int64) ([]receipt.Line, int64, error) {
	fh, err := os.Open(s.opts.Engine.Config().LedgerPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, from, fmt.Errorf("ledger: %w", err)
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err == nil && fi.Size() < from {
		from = 0 // replaced by a new file (the ledger continued elsewhere)
	}
	if _, err := fh.Seek(from, io.SeekStart); err != nil {
		return nil, from, fmt.Errorf("ledger: %w", err)
	}
	var out []receipt.Line
	br := bufio.NewReaderSize(fh, 64<<10)
	off := from
	for {
		b, err := br.ReadBytes('\n')
		if err == io.EOF {
			return out, off, nil // a torn or half-written last line waits for its newline
		}
		if err != nil {
			return out, off, fmt.Errorf("ledger: %w", err)
		}
		off += int64(len(b))
		var ln receipt.Line
		if err := json.Unmarshal(bytes.TrimSpace(b), &ln); err != nil {
			return out, off, fmt.Errorf("ledger: line at byte %d: %w", off-int64(len(b)), err)
		}
		out = append(out, ln)
	}
}

// verifyReceipts is POST /v1/receipts/verify: the ledger's chain checked whole. It says
// whether the file is intact and its head; it shows no line.
func (s *Server) verifyReceipts(w http.ResponseWriter, r *http.Request) {
	fh, err := os.Open(s.opts.Engine.Config().LedgerPath())
	if errors.Is(err, os.ErrNotExist) {
		writeJSON(w, http.StatusOK, Verification{OK: true})
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, CodeLedgerError, "ledger: "+err.Error())
		return
	}
	defer fh.Close()
	c, err := receipt.VerifyChain(fh)
	v := Verification{OK: err == nil, Lines: c.Lines, Head: c.Head}
	var ve *receipt.VerifyError
	switch {
	case errors.As(err, &ve):
		v.BadLine, v.Problem = ve.Line, ve.Reason
	case err != nil:
		writeError(w, http.StatusInternalServerError, CodeLedgerError, "ledger: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func intParam(v string, def, lo, hi int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("expected an integer from %d to %d, got %q", lo, hi, v)
	}
	return n, nil
}
