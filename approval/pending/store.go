// Package pending owns approvals that wait for a person across processes: the MCP server
// that asked and `airlock approvals` in another terminal that answers.
//
// A coding agent's client gives a tool call about a minute, so a call that waits for a
// person inside the call fails. Instead the question is written down: one JSON file per
// approval in a directory of Airlock's own state (beside the ledger, never in the
// workspace), every read-modify-write under an exclusive flock on the directory's lock
// file and every write a rename, so two processes never see half a record or lose an
// answer. The asking side polls the file; the answering side changes its state once.
//
// A pending approval expires: past ExpiresAt it reads as [Expired], a denial that never
// runs, whoever asks. An answer is final — approving an approval already denied or expired
// is refused — and it records who gave it (`cli`, `elicitation`) and, for a denial, the
// message that goes back to the model. An answered approval is used once ([Store.Consume]),
// so an answer cannot be replayed onto a second call.
package pending

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// State is where an approval is.
type State string

// States. Pending is the only one that changes.
const (
	Pending  State = "pending"
	Approved State = "approved"
	Denied   State = "denied"
	Expired  State = "expired"
)

// Scope is how far an approval reaches.
type Scope string

// Scopes.
const (
	Once    Scope = "once"    // this call
	Session Scope = "session" // what the record's SessionCovers says, for the rest of the session
)

// Sentinel errors.
var (
	ErrNotFound = errors.New("no such approval")
	// ErrDecided: the approval was already answered, consumed or expired.
	ErrDecided = errors.New("approval already decided")
)

// Record is one approval.
type Record struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	// Arguments are the call's, so that the call can be run again once approved.
	Arguments       json.RawMessage `json:"arguments"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	// What the person is shown ([Record.Text]). Summary is one line for a list; Fields are
	// what the tool declares decides the call's effect (for a fetch the method and full
	// URL, for a tool that declares nothing every argument); Preview is its effect (a
	// write's whole diff); SessionCovers says in words what an approval for the session
	// covers.
	Summary       string   `json:"summary"`
	Fields        []Field  `json:"fields,omitempty"`
	Workdir       string   `json:"workdir,omitempty"`
	Backend       string   `json:"backend"`
	Risk          string   `json:"risk"`
	Reasons       []string `json:"reasons,omitempty"`
	Preview       string   `json:"preview,omitempty"`
	SessionCovers string   `json:"session_covers,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	PID       int       `json:"pid"`

	State     State      `json:"state"`
	Scope     Scope      `json:"scope,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Message   string     `json:"message,omitempty"`
	// Consumed is set once the answer was applied to a call.
	Consumed bool `json:"consumed,omitempty"`
}

// Field is one labelled value of what a call will do.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Effective returns the record's state at now: a pending record past its expiry is
// Expired.
func (r Record) Effective(now time.Time) State {
	if r.State == Pending && !now.Before(r.ExpiresAt) {
		return Expired
	}
	return r.State
}

// Store is a directory of approvals. It is safe for concurrent use by goroutines and
// processes.
type Store struct {
	dir string
	now func() time.Time
}

var validID = regexp.MustCompile(`^apr_[0-9a-f]{16}$`)

// Open opens (creating) the store in dir, which only the user may enter.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("approvals: %s must be a directory only its owner can use (mode %s)", dir, fi.Mode().Perm())
	}
	return &Store{dir: dir, now: time.Now}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// NewID returns a fresh approval ID.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "apr_" + hex.EncodeToString(b[:])
}

// Create writes a new pending record; r.ID, CreatedAt and State are set when empty.
func (s *Store) Create(r *Record) error {
	if r.ID == "" {
		r.ID = NewID()
	}
	if !validID.MatchString(r.ID) {
		return fmt.Errorf("create approval: bad id %q", r.ID)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now().UTC()
	}
	if r.ExpiresAt.IsZero() {
		return errors.New("create approval: expiry is required")
	}
	r.State, r.PID = Pending, os.Getpid()
	return s.locked(func() error { return s.write(r) })
}

// Get reads one record, with an expired pending record reported as Expired.
func (s *Store) Get(id string) (Record, error) {
	var r Record
	err := s.locked(func() error {
		var err error
		r, err = s.read(id)
		return err
	})
	if err == nil {
		r.State = r.Effective(s.now())
	}
	return r, err
}

// List returns the records, oldest first; with pendingOnly only those still waiting.
func (s *Store) List(pendingOnly bool) ([]Record, error) {
	var out []Record
	err := s.locked(func() error {
		ents, err := os.ReadDir(s.dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || !validID.MatchString(id) {
				continue
			}
			r, err := s.read(id)
			if err != nil {
				continue // removed meanwhile, or not ours
			}
			r.State = r.Effective(s.now())
			if pendingOnly && r.State != Pending {
				continue
			}
			out = append(out, r)
		}
		return nil
	})
	sort.Slice(out, func(a, b int) bool { return out[a].CreatedAt.Before(out[b].CreatedAt) })
	return out, err
}

// Decide answers a pending approval. by names who answered ("cli", "elicitation"); a
// denial's message goes back to the model.
func (s *Store) Decide(id string, approve bool, scope Scope, by, message string) (Record, error) {
	var r Record
	err := s.locked(func() error {
		var err error
		if r, err = s.read(id); err != nil {
			return err
		}
		now := s.now().UTC()
		if st := r.Effective(now); st != Pending {
			r.State = st
			return fmt.Errorf("approval %s is %s: %w", id, st, ErrDecided)
		}
		r.State, r.DecidedBy, r.DecidedAt, r.Message = Denied, by, &now, message
		if approve {
			r.State = Approved
			if scope == "" {
				scope = Once
			}
			r.Scope = scope
		}
		return s.write(&r)
	})
	return r, err
}

// Consume marks an answered (or expired) record as applied to a call and returns it as it
// was; a record already consumed, or still pending, is ErrDecided / returned unchanged.
func (s *Store) Consume(id string) (Record, error) {
	var r Record
	err := s.locked(func() error {
		var err error
		if r, err = s.read(id); err != nil {
			return err
		}
		r.State = r.Effective(s.now())
		switch {
		case r.Consumed:
			return fmt.Errorf("approval %s was used already: %w", id, ErrDecided)
		case r.State == Pending:
			return nil
		}
		r.Consumed = true
		return s.write(&r)
	})
	return r, err
}

// FindForCall returns the newest unconsumed record for the same call in the same session:
// same tool and the same canonical arguments.
func (s *Store) FindForCall(sessionID, tool, argsSHA string) (Record, bool, error) {
	all, err := s.List(false)
	if err != nil {
		return Record{}, false, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		r := all[i]
		if !r.Consumed && r.SessionID == sessionID && r.Tool == tool && r.ArgumentsSHA256 == argsSHA {
			return r, true, nil
		}
	}
	return Record{}, false, nil
}

// Sweep removes records that were consumed, or expired or answered, longer than olderThan
// ago.
func (s *Store) Sweep(olderThan time.Duration) error {
	cut := s.now().Add(-olderThan)
	return s.locked(func() error {
		ents, err := os.ReadDir(s.dir)
		if err != nil {
			return err
		}
		var errs []error
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || !validID.MatchString(id) {
				continue
			}
			r, err := s.read(id)
			if err != nil {
				continue
			}
			if r.Effective(s.now()) != Pending && r.CreatedAt.Before(cut) {
				if err := os.Remove(s.path(id)); err != nil && !os.IsNotExist(err) {
					errs = append(errs, err)
				}
			}
		}
		return errors.Join(errs...)
	})
}

func (s *Store) path(id string) string { return filepath.Join(s.dir, id+".json") }

func (s *Store) read(id string) (Record, error) {
	var r Record
	if !validID.MatchString(id) {
		return r, fmt.Errorf("approval %q: %w", id, ErrNotFound)
	}
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("approval %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("read approval: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read approval %s: %w", id, err)
	}
	return r, nil
}

// write replaces the record's file whole: a temp file in the same directory, fsynced, then
// renamed over it.
func (s *Store) write(r *Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write approval: %w", err)
	}
	f, err := os.CreateTemp(s.dir, ".tmp-"+r.ID+"-*")
	if err != nil {
		return fmt.Errorf("write approval: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write approval: %w", err)
	}
	if err := os.Rename(tmp, s.path(r.ID)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write approval: %w", err)
	}
	return nil
}

// locked runs fn holding the store's exclusive lock, shared with every other process.
func (s *Store) locked(fn func() error) error {
	f, err := os.OpenFile(filepath.Join(s.dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("approvals lock: %w", err)
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("approvals lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	return fn()
}

// Wait polls the record until it is no longer pending (answered or expired) or ctx ends,
// and returns it as last read.
func (s *Store) Wait(ctx context.Context, id string, every time.Duration) (Record, error) {
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r, err := s.Get(id)
		if err != nil || r.State != Pending {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-t.C:
		}
	}
}
