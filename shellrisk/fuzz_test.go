package shellrisk

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzClassify checks the classifier's promises on any input: it does not panic, it never
// calls safe what it could not parse, and its verdict is consistent.
func FuzzClassify(f *testing.F) {
	for _, tc := range loadCorpus(f) {
		f.Add(tc.command)
	}
	f.Fuzz(func(t *testing.T, command string) {
		v := classifyOrHang(t, Context{}, command)
		if !v.Parsed && v.Risk == RiskSafe {
			t.Fatalf("unparsed command judged safe: %q", command)
		}
		if v.FailedClosed() && v.Risk < RiskExec {
			t.Fatalf("command that failed closed judged %s: %q", v.Risk, command)
		}
		if slices.Contains(v.Codes(), codeInternalError) {
			// Classify recovers so that callers never see a panic; the fuzzer must.
			t.Fatalf("classifier panicked on %q: %s", command, v.Reasons[0].Segment)
		}
		if v.Commands == nil || (!v.Parsed && len(v.Commands) > 0) {
			t.Fatalf("commands %v with parsed %v", v.Commands, v.Parsed)
		}
		if v.Risk < RiskSafe || v.Risk > RiskDangerous {
			t.Fatalf("risk out of range: %d", v.Risk)
		}
		if v.HardDeny && v.Risk != RiskDangerous {
			t.Fatalf("hard deny with risk %s", v.Risk)
		}
		if v.Reasons == nil {
			t.Fatal("nil reasons")
		}
		max := RiskSafe
		for _, r := range v.Reasons {
			if r.Code == "" {
				t.Fatal("reason without code")
			}
			max = maxRisk(max, r.Risk)
		}
		if v.Parsed && max != v.Risk {
			t.Fatalf("risk %s is not the max of its reasons (%s)", v.Risk, max)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("marshal verdict: %v", err)
		}
	})
}

func maxRisk(a, b Risk) Risk {
	if a > b {
		return a
	}
	return b
}

// FuzzLexing mutates the places where the parser and the shells may read a command
// differently (comments, quotes, continuations, control characters, Unicode spaces) around
// a deletion, in a context: whatever the classifier makes of it, a command holding a
// carriage return or a NUL is never safe, and nothing panics.
func FuzzLexing(f *testing.F) {
	for _, s := range []string{
		"echo hi\r# ; rm -rf /", "a=(x)# ; rm -rf /", "echo a # c \\\nrm -rf /", "echo $'a\\\n'; rm -rf /",
		"echo $'it\\'s'; rm -rf /", "ls\u00a0; rm -rf /", "echo a\x00b; rm -rf /", "(ls)# x", "f() { ls; }# x",
		"cat <<'EOF'\n$(rm -rf /)\nEOF", "echo \"a\\\nb\" # c", "sh -c 'ls\r# ; rm -rf /'",
	} {
		f.Add(s)
	}
	cx := Context{Workspace: "/w", WriteRoots: []string{"src"}, Protected: []string{"/w/.airlock/ledger.jsonl"}}
	f.Fuzz(func(t *testing.T, command string) {
		v := classifyOrHang(t, cx, command)
		if slices.Contains(v.Codes(), codeInternalError) {
			t.Fatalf("classifier panicked on %q: %s", command, v.Reasons[0].Segment)
		}
		if strings.ContainsAny(command, "\r\x00") && v.Risk < RiskExec {
			t.Fatalf("%q holds a CR or NUL and is %s", command, v.Risk)
		}
		if !v.Parsed && v.Risk < RiskExec {
			t.Fatalf("unparsed %q is %s", command, v.Risk)
		}
	})
}

// hangAfter is far beyond any classification (a 4 KB script takes about a millisecond):
// an input that takes longer is stuck, and the fuzzer must record it rather than stall.
const hangAfter = 10 * time.Second

func classifyOrHang(t *testing.T, cx Context, command string) Verdict {
	t.Helper()
	done := make(chan Verdict, 1)
	go func() { done <- ClassifyIn(cx, command) }()
	select {
	case v := <-done:
		return v
	case <-time.After(hangAfter):
		t.Fatalf("classifier stuck on %q", command)
		return Verdict{}
	}
}
