package approval

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/shellrisk"
)

func TestTTYApprover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		input string
		want  Choice
	}{
		{"o\n", Once},
		{"once\n", Once},
		{"S\n", Session},
		{"d\n", Deny},
		{"whatever\n", Deny},
	}
	for _, tc := range tests {
		t.Run(tc.input, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			a := NewTTYApprover(strings.NewReader(tc.input), &out, time.Second)
			a.IsTerminal = func() bool { return true }
			ans, err := a.Ask(context.Background(), Prompt{CallID: "c1", Command: "make", Risk: shellrisk.RiskExec, Reasons: []shellrisk.Reason{{Code: "runs_code", Segment: "make", Risk: shellrisk.RiskExec}}})
			if err != nil {
				t.Fatalf("ask: %v", err)
			}
			if ans.Choice != tc.want || ans.By != "tty" {
				t.Fatalf("answer %+v, want %s by tty", ans, tc.want)
			}
			for _, s := range []string{"make", "exec", "runs_code"} {
				if !strings.Contains(out.String(), s) {
					t.Errorf("prompt %q does not show %q", out.String(), s)
				}
			}
		})
	}
}

func TestTTYApproverTimeoutAndNoTerminal(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close() })
	a := NewTTYApprover(r, io.Discard, 20*time.Millisecond)
	a.IsTerminal = func() bool { return true }
	ans, err := a.Ask(context.Background(), Prompt{CallID: "c1", Command: "make"})
	if err != nil || ans.Choice != Deny || ans.By != "tty:timeout" {
		t.Fatalf("timeout: %+v %v", ans, err)
	}

	// End of input: nobody is there to answer, which is not a person's denial.
	e := NewTTYApprover(strings.NewReader(""), io.Discard, time.Second)
	e.IsTerminal = func() bool { return true }
	if _, err := e.Ask(context.Background(), Prompt{CallID: "c1", Command: "make"}); !errors.Is(err, ErrNoApprover) {
		t.Errorf("end of input: err = %v, want ErrNoApprover", err)
	}

	// A pipe is not a terminal: nobody can answer.
	b := NewTTYApprover(strings.NewReader("o\n"), io.Discard, time.Second)
	if _, err := b.Ask(context.Background(), Prompt{CallID: "c1"}); !errors.Is(err, ErrNoApprover) {
		t.Fatalf("no terminal: %v", err)
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	q := NewQueue()
	done := make(chan Answer, 1)
	go func() {
		a, err := q.Ask(context.Background(), Prompt{CallID: "c1", Command: "make"})
		if err != nil {
			t.Errorf("ask: %v", err)
		}
		done <- a
	}()
	var pending []Prompt
	for deadline := time.Now().Add(5 * time.Second); len(pending) == 0 && time.Now().Before(deadline); {
		pending = q.Pending()
		time.Sleep(time.Millisecond)
	}
	if len(pending) != 1 || pending[0].CallID != "c1" {
		t.Fatalf("pending %v", pending)
	}
	if _, err := q.Ask(context.Background(), Prompt{CallID: "c1"}); err == nil {
		t.Error("duplicate call id accepted")
	}
	if err := q.Resolve("nope", Answer{Choice: Once}); !errors.Is(err, ErrNotPending) {
		t.Errorf("resolve unknown: %v", err)
	}
	if err := q.Resolve("c1", Answer{Choice: Session, By: "web"}); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if a := <-done; a.Choice != Session || a.By != "web" {
		t.Fatalf("answer %+v", a)
	}
	if len(q.Pending()) != 0 {
		t.Fatalf("still pending: %v", q.Pending())
	}
}
