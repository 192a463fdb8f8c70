package pending

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "approvals"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func record(expires time.Duration) *Record {
	return &Record{SessionID: "s", CallID: "c", Tool: "terminal", Arguments: []byte(`{"command":"make"}`),
		ArgumentsSHA256: "h", Summary: "make", ExpiresAt: time.Now().Add(expires)}
}

func TestDecideOnceAndFinal(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := record(time.Minute)
	if err := s.Create(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Decide(r.ID, false, "", "cli", "use make -n first")
	if err != nil || got.State != Denied || got.DecidedBy != "cli" || got.Message != "use make -n first" {
		t.Fatalf("decide: %+v %v", got, err)
	}
	if _, err := s.Decide(r.ID, true, Once, "cli", ""); !errors.Is(err, ErrDecided) {
		t.Fatalf("second answer: %v", err)
	}
	c, err := s.Consume(r.ID)
	if err != nil || c.State != Denied {
		t.Fatalf("consume: %+v %v", c, err)
	}
	if _, err := s.Consume(r.ID); !errors.Is(err, ErrDecided) {
		t.Fatalf("second consume: %v", err)
	}
	if _, ok, _ := s.FindForCall("s", "terminal", "h"); ok {
		t.Fatal("consumed record found for a new call")
	}
}

func TestExpiredIsNeverApproved(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := record(50 * time.Millisecond)
	if err := s.Create(r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Wait(context.Background(), r.ID, 10*time.Millisecond)
	if err != nil || got.State != Expired {
		t.Fatalf("wait: %+v %v", got, err)
	}
	if _, err := s.Decide(r.ID, true, Once, "cli", ""); !errors.Is(err, ErrDecided) {
		t.Fatalf("approving an expired record: %v", err)
	}
	if l, _ := s.List(true); len(l) != 0 {
		t.Fatalf("expired record listed as pending: %+v", l)
	}
}

// Two writers racing to answer: exactly one wins, the other is told it was decided.
func TestConcurrentAnswersOneWins(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := record(time.Minute)
	if err := s.Create(r); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := s.Decide(r.ID, i%2 == 0, Once, "cli", ""); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d answers won", wins)
	}
}

func TestBadIDsAndLooseDirectory(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, id := range []string{"", "../x", "apr_zz", "apr_0123456789abcdef/../../x"} {
		if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): %v", id, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("opened a world-writable approvals directory")
	}
}

func TestSweep(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	old := record(time.Minute)
	old.CreatedAt = time.Now().Add(-48 * time.Hour)
	old.ExpiresAt = time.Now().Add(-47 * time.Hour)
	live := record(time.Minute)
	for _, r := range []*Record{old, live} {
		if err := s.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sweep(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(old.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old record kept: %v", err)
	}
	if r, err := s.Get(live.ID); err != nil || r.State != Pending {
		t.Fatalf("live record: %+v %v", r, err)
	}
}
