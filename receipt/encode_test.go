package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/receipt/receipttest"
)

// marshalSeal is seal as it was, by json.Marshal alone: the bytes the chain has always had.
func marshalSeal(t testing.TB, ln Line) []byte {
	t.Helper()
	ln.Hash = ""
	body, err := json.Marshal(ln)
	if err != nil {
		t.Fatal(err)
	}
	body = bytes.TrimSuffix(body, []byte(`,"hash":""}`))
	sum := sha256.Sum256(append(bytes.Clone(body), '}'))
	return append(append(body, `,"hash":"`...), hex.EncodeToString(sum[:])+`"}`...)
}

// filledLine is a line with every field of Line and Receipt set (arguments apart, which
// appendLine leaves to json.Marshal): a field added to either without appendLine writing it
// makes TestAppendLineMatchesMarshal fail.
func filledLine(t testing.TB) Line {
	ln := receipttest.Filled[Line](t)
	ln.Receipt.Arguments = nil
	return ln
}

func TestAppendLineMatchesMarshal(t *testing.T) {
	t.Parallel()
	exit, zero := -1, 0
	at := time.Date(2026, 12, 6, 23, 1, 2, 345678900, time.UTC)
	kolkata := time.FixedZone("IST", 5*3600+30*60)
	west := time.FixedZone("X", -(9*3600 + 59))
	filled := filledLine(t)
	typical := Line{Seq: 42, Prev: genesis, Time: at, Event: EventDispatched, Receipt: &Receipt{
		CallID: "load0-17", ToolName: "read_file", SessionID: "s1", ArgumentsSHA256: strings.Repeat("ab", 32),
		Client: &Client{Caller: "alice"}, Decision: "allow", ReasonCode: "allowed", DecidedBy: "policy:paths, approval",
		Risk: "read", Paths: []string{"/ws/small.txt"}, DispatchStarted: true, Outcome: Interrupted,
		ExitCode: &zero, Backend: "local", ReceivedAt: at, DecidedAt: &at,
	}}
	cases := []struct {
		name   string
		ln     Line
		byHand bool // appendLine writes it itself rather than leaving it to json.Marshal
	}{
		{"zero", Line{}, true},
		{"filled", filled, true},
		{"typical", typical, true},
		{"note, no receipt", Line{Seq: 1, Prev: genesis, Time: at, Event: EventRecovered, Note: "cut a torn last line of 12 bytes"}, true},
		{"empty paths and client", Line{Receipt: &Receipt{Paths: []string{}, Client: &Client{}, ExitCode: &exit}}, true},
		{"zones", Line{Time: at.In(kolkata), Receipt: &Receipt{ReceivedAt: at.In(west), StartedAt: new(at.In(kolkata))}}, true},
		{"network", Line{Event: EventNetworkDenied, Receipt: &Receipt{Network: &NetworkDenial{Host: "example.com", Port: 443, Reason: "not_allowed", By: "egress_proxy"}}}, true},
		{"kept arguments", Line{Receipt: &Receipt{Arguments: json.RawMessage(`{ "path" : "a<b" }`)}}, false},
		{"html in a string", Line{Receipt: &Receipt{CallID: "a<b>&c"}}, false},
		{"quote and backslash", Line{Note: `say "hi" \ bye`}, false},
		{"control character", Line{Receipt: &Receipt{Paths: []string{"a\nb"}}}, false},
		{"unicode", Line{Receipt: &Receipt{DecidedBy: "politique: é, \u2028"}}, false},
		{"invalid UTF-8", Line{Receipt: &Receipt{ErrorCode: "\xff"}}, false},
		{"nanoseconds trimmed", Line{Time: time.Date(2026, 1, 2, 3, 4, 5, 100, time.UTC)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(tc.ln)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendLine(nil, &tc.ln)
			if ok != tc.byHand {
				t.Fatalf("appendLine ok = %v, want %v (%s)", ok, tc.byHand, got)
			}
			if ok && !bytes.Equal(got, want) {
				t.Fatalf("appendLine wrote\n%s\njson.Marshal writes\n%s", got, want)
			}
			sealed, _, err := seal(tc.ln)
			if err != nil {
				t.Fatal(err)
			}
			if ref := marshalSeal(t, tc.ln); !bytes.Equal(sealed, ref) {
				t.Fatalf("seal wrote\n%s\nwant\n%s", sealed, ref)
			}
			if _, err := parseLine(sealed); err != nil {
				t.Fatalf("sealed line does not parse: %v", err)
			}
			// Appended after other lines, as a group commit does: the same bytes after them.
			prefix := []byte("{\"an\":\"earlier line\"}\n")
			after, _, err := appendSealed(bytes.Clone(prefix), tc.ln)
			if err != nil || !bytes.Equal(after, append(prefix, sealed...)) {
				t.Fatalf("appendSealed after a line wrote\n%s\nwant\n%s%s (error %v)", after, prefix, sealed, err)
			}
		})
	}
}

// TestAppendLineRefusesWhatMarshalRefuses: a time json.Marshal cannot encode is not written
// by hand either, so seal fails as it did.
func TestAppendLineRefusesWhatMarshalRefuses(t *testing.T) {
	t.Parallel()
	for _, tm := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600)),
	} {
		ln := Line{Time: tm}
		if _, err := json.Marshal(ln); err == nil {
			t.Fatalf("json.Marshal encodes %v; the case tests nothing", tm)
		}
		if b, ok := appendLine(nil, &ln); ok {
			t.Errorf("appendLine wrote %s for %v, which json.Marshal refuses", b, tm)
		}
		if _, _, err := seal(ln); err == nil {
			t.Errorf("seal of a line at %v did not fail", tm)
		}
	}
}

func FuzzAppendLine(f *testing.F) {
	f.Add("read_file", "/ws/a.txt", "policy:paths", int64(3), int64(1700000000123456789))
	f.Add("a<b", "\xff", "\u2028", int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, name, path, by string, seq, nanos int64) {
		at := time.Unix(0, nanos).UTC()
		ln := Line{Seq: seq, Prev: genesis, Time: at, Event: EventCompleted, Note: by, Receipt: &Receipt{
			CallID: name, ToolName: name, Client: &Client{Name: by}, DecidedBy: by, Paths: []string{path, name},
			ReceivedAt: at, FinishedAt: &at,
		}}
		want, err := json.Marshal(ln)
		got, ok := appendLine(nil, &ln)
		if ok && (err != nil || !bytes.Equal(got, want)) {
			t.Fatalf("appendLine wrote\n%s\njson.Marshal writes (error %v)\n%s", got, err, want)
		}
	})
}
