package approval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/shellrisk"
	"github.com/airlock-dev/airlock/tool"

	"golang.org/x/term"
)

// ErrNoApprover is returned by an [Approver] when nobody can answer. The gate then refuses
// the call with code approval_required: silence never approves.
var ErrNoApprover = errors.New("no approver available")

// ErrNotPending is returned by [Queue.Resolve] for a call that is not waiting.
var ErrNotPending = errors.New("no pending approval with that id")

// Approver puts a question to a person.
type Approver interface {
	Ask(ctx context.Context, p Prompt) (Answer, error)
}

// Prompt is what a person is shown: everything that decides what the call will do.
type Prompt struct {
	CallID    string             `json:"call_id"`
	SessionID string             `json:"session_id"`
	Command   string             `json:"command"`
	Risk      shellrisk.Risk     `json:"risk"`
	Reasons   []shellrisk.Reason `json:"reasons"`
	// Tool and Arguments are the call's, so that an answer given later can be matched to
	// the same call and the call run again.
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Fields are what the tool declares decides the call's effect (see [tool.Subject]).
	Fields []tool.Field `json:"fields,omitempty"`
	// Session says in words what an answer "for the session" covers.
	Session string `json:"session,omitempty"`
	// Preview is the call's effect, built through the tool's own road (a write's diff).
	Preview string `json:"preview,omitempty"`
	// Workdir is where the call runs, resolved by policy.
	Workdir string `json:"workdir,omitempty"`
	// Backend names the environment the call runs in.
	Backend string `json:"backend,omitempty"`
}

// Choice is a person's answer.
type Choice string

// The choices. The zero Choice is a denial.
const (
	Once    Choice = "once"    // run this call
	Session Choice = "session" // run this exact command for the rest of the session
	Deny    Choice = "deny"    // refuse
)

// Answer is a person's choice and who gave it ("tty", a user name).
type Answer struct {
	Choice Choice `json:"choice"`
	By     string `json:"by"`
	// Message is what a person said with a denial; it goes back to the model.
	Message string `json:"message,omitempty"`
	// Shown is the preview the person answered about. An approval applies only while the
	// call's preview is still what they saw.
	Shown string `json:"shown,omitempty"`
}

// PendingError is returned by an [Approver] that asked a person who has not answered yet:
// the call is refused for now with code approval_pending, and the question stays open
// under ID for a later answer (airlock approvals, or the client's elicitation).
type PendingError struct {
	ID string
	// Next says what the agent or person can do next.
	Next string
}

func (e *PendingError) Error() string {
	msg := "waiting for a person to approve (approval " + e.ID + ")"
	if e.Next != "" {
		msg += "; " + e.Next
	}
	return msg
}

// ErrExpired is returned by an [Approver] whose question expired unanswered: a denial.
var ErrExpired = errors.New("approval expired unanswered")

// TTYApprover asks on a terminal. Without a terminal it answers [ErrNoApprover], so that a
// run with its input piped from a file never blocks on, or is approved by, that input. A
// timeout, end of input or an answer it does not understand is a denial.
type TTYApprover struct {
	in      io.Reader
	out     io.Writer
	timeout time.Duration
	// IsTerminal reports whether in is an interactive terminal. It defaults to
	// golang.org/x/term's check of an *os.File; tests replace it.
	IsTerminal func() bool

	mu    sync.Mutex
	once  sync.Once
	lines chan string
}

var _ Approver = (*TTYApprover)(nil)

// NewTTYApprover asks on in and out, waiting at most timeout (no limit when zero) for each
// answer.
func NewTTYApprover(in io.Reader, out io.Writer, timeout time.Duration) *TTYApprover {
	t := &TTYApprover{in: in, out: out, timeout: timeout}
	t.IsTerminal = func() bool { return isCharDevice(in) }
	return t
}

func isCharDevice(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// readLines runs once, for the approver's life: a read from a terminal cannot be
// cancelled, so one goroutine owns the reader and answers arrive on a channel.
func (t *TTYApprover) readLines() {
	t.lines = make(chan string)
	go func() {
		defer close(t.lines)
		sc := bufio.NewScanner(t.in)
		for sc.Scan() {
			t.lines <- sc.Text()
		}
	}()
}

// Ask shows the command, its risk and reasons, and reads o(nce), s(ession) or d(eny).
func (t *TTYApprover) Ask(ctx context.Context, p Prompt) (Answer, error) {
	if t.IsTerminal == nil || !t.IsTerminal() {
		return Answer{}, ErrNoApprover
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.once.Do(t.readLines)

	deny := Answer{Choice: Deny, By: "tty"}
	// Drop anything typed before the question was shown.
	for drained := false; !drained; {
		select {
		case <-t.lines:
		default:
			drained = true
		}
	}
	// Everything from the agent is escaped: its bytes never reach the terminal raw.
	fmt.Fprintf(t.out, "\nairlock: approval needed for call %s\n", pending.Escape(p.CallID))
	if len(p.Fields) == 0 {
		fmt.Fprintf(t.out, "  command: %s\n", pending.Escape(p.Command))
	}
	for _, f := range p.Fields {
		fmt.Fprintf(t.out, "  %s: %s\n", pending.Escape(f.Name), pending.Escape(f.Value))
	}
	fmt.Fprintf(t.out, "  risk:    %s\n", p.Risk)
	for _, r := range p.Reasons {
		fmt.Fprintf(t.out, "  reason:  %s (%s) in %s\n", r.Code, r.Risk, pending.Quote(r.Segment))
	}
	if p.Preview != "" {
		fmt.Fprintf(t.out, "%s\n", pending.EscapeText(p.Preview))
	}
	session := p.Session
	if session == "" {
		session = "this exact command again"
	}
	fmt.Fprintf(t.out, "  [s]ession runs %s\nRun it? [o]nce, [s]ession, [d]eny: ", session)

	var timeout <-chan time.Time
	if t.timeout > 0 {
		timer := time.NewTimer(t.timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case line, ok := <-t.lines:
		if !ok {
			// Nobody is there to answer: not a person's decision.
			fmt.Fprintln(t.out, "\nairlock: end of input, refused")
			return Answer{}, ErrNoApprover
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "o", "once", "y", "yes":
			return Answer{Choice: Once, By: "tty", Shown: p.Preview}, nil
		case "s", "session":
			return Answer{Choice: Session, By: "tty", Shown: p.Preview}, nil
		default:
			return deny, nil
		}
	case <-timeout:
		fmt.Fprintln(t.out, "\nairlock: no answer in time, denied")
		return Answer{Choice: Deny, By: "tty:timeout"}, nil
	case <-ctx.Done():
		return deny, fmt.Errorf("tty approval: %w", ctx.Err())
	}
}

// Queue holds calls waiting for a person. Ask blocks until [Queue.Resolve] is called for
// the call or the context ends; [Queue.Pending] lists what is waiting, for a server or a
// UI to show.
type Queue struct {
	mu      sync.Mutex
	pending map[string]*queued
	order   []string
}

type queued struct {
	prompt Prompt
	answer chan Answer
}

var _ Approver = (*Queue)(nil)

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	return &Queue{pending: map[string]*queued{}}
}

// Ask waits for an answer to p, keyed by its CallID.
func (q *Queue) Ask(ctx context.Context, p Prompt) (Answer, error) {
	if p.CallID == "" {
		return Answer{Choice: Deny}, errors.New("queue approval: empty call id")
	}
	item := &queued{prompt: p, answer: make(chan Answer, 1)}
	q.mu.Lock()
	if _, dup := q.pending[p.CallID]; dup {
		q.mu.Unlock()
		return Answer{Choice: Deny}, fmt.Errorf("queue approval: call %q is already waiting", p.CallID)
	}
	q.pending[p.CallID] = item
	q.order = append(q.order, p.CallID)
	q.mu.Unlock()

	select {
	case a := <-item.answer:
		return a, nil
	case <-ctx.Done():
		q.remove(p.CallID)
		// An answer may have raced the cancellation; it is dropped, and the call denied.
		return Answer{Choice: Deny}, fmt.Errorf("queue approval: %w", ctx.Err())
	}
}

// Resolve answers a waiting call.
func (q *Queue) Resolve(id string, a Answer) error {
	q.mu.Lock()
	item, ok := q.pending[id]
	if ok {
		q.removeLocked(id)
	}
	q.mu.Unlock()
	if !ok {
		return fmt.Errorf("resolve %q: %w", id, ErrNotPending)
	}
	item.answer <- a
	return nil
}

// Pending lists the waiting prompts, oldest first.
func (q *Queue) Pending() []Prompt {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Prompt, 0, len(q.order))
	for _, id := range q.order {
		out = append(out, q.pending[id].prompt)
	}
	return out
}

func (q *Queue) remove(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.removeLocked(id)
}

func (q *Queue) removeLocked(id string) {
	delete(q.pending, id)
	for i, o := range q.order {
		if o == id {
			q.order = append(q.order[:i], q.order[i+1:]...)
			break
		}
	}
}
