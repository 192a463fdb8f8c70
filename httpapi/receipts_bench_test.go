package httpapi_test

import (
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/receipt"
)

// BenchmarkListReceipts times one page of GET /v1/receipts (100 lines of the caller's,
// newest first) over a ledger of 2,000 lines, beside what the handler costs at least:
// reading and parsing the same file with receipt.ReadAll. The API reads the file on each
// request, so the page costs what the ledger's length costs.
func BenchmarkListReceipts(b *testing.B) {
	f := newFixture(b, "")
	l, err := receipt.Open(f.ledger)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i := range 2000 {
		caller := "alice"
		if i%2 == 1 {
			caller = "bob"
		}
		r := &receipt.Receipt{CallID: "c", ToolName: "read_file", SessionID: "s-bench", Decision: "allow",
			Outcome: receipt.Executed, Status: "ok", ReceivedAt: now, Client: &receipt.Client{Caller: caller}}
		if err := l.Append(receipt.EventCompleted, r); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			req, _ := http.NewRequest("GET", f.url+"/v1/receipts?limit=100", nil)
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatal(resp.Status)
			}
		}
	})
	b.Run("readall", func(b *testing.B) {
		for b.Loop() {
			fh, err := os.Open(f.ledger)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := receipt.ReadAll(fh); err != nil {
				b.Fatal(err)
			}
			fh.Close()
		}
	})
}
