package backend_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/hashicorp/go-hclog"
)

// helperState stands for an environment's helper: alive or not, and how often it was
// brought back.
type helperState struct {
	mu      sync.Mutex
	alive   bool
	repairs atomic.Int32
}

func (h *helperState) sound() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.alive, "the helper stopped"
}

func (h *helperState) mended() bool { ok, _ := h.sound(); return ok }

func (h *helperState) set(alive bool) {
	h.mu.Lock()
	h.alive = alive
	h.mu.Unlock()
}

func newRepairer(h *helperState, prepare func(ctx context.Context, why string) ([]string, error)) *backend.Repairer {
	return backend.NewRepairer(hclog.NewNullLogger(), func() string { return "sandbox test" }, h.mended, prepare)
}

// Concurrent calls that find the helper gone repair once, and exactly one of them gets the
// repair's notes; a note owed before is handed to one call too.
func TestRepairerRepairsOnce(t *testing.T) {
	h := &helperState{}
	r := newRepairer(h, func(ctx context.Context, why string) ([]string, error) {
		h.repairs.Add(1)
		time.Sleep(20 * time.Millisecond) // the others queue behind this repair
		h.set(true)
		return []string{"recreated: " + why}, nil
	})
	r.Owe("owed before")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []string
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			notes, err := r.Ready(context.Background(), h.sound)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got = append(got, notes...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := h.repairs.Load(); n != 1 {
		t.Fatalf("%d repairs, want 1", n)
	}
	want := map[string]bool{"recreated: the helper stopped": true, "owed before": true}
	if len(got) != len(want) || !want[got[0]] || !want[got[1]] || got[0] == got[1] {
		t.Fatalf("notes handed out: %q, want each of %v once", got, want)
	}
	if notes, err := r.Ready(context.Background(), h.sound); err != nil || len(notes) != 0 {
		t.Fatalf("a sound environment: notes %q, err %v; want none", notes, err)
	}
}

// Close cancels a repair in flight and returns only once it has ended; calls after Close
// get ErrClosed and start no repair.
func TestRepairerCloseWaitsForRepair(t *testing.T) {
	h := &helperState{}
	started, ended := make(chan struct{}), make(chan struct{})
	r := newRepairer(h, func(ctx context.Context, why string) ([]string, error) {
		h.repairs.Add(1)
		close(started)
		<-ctx.Done() // a repair that would run on: only Close's cancel ends it
		time.Sleep(20 * time.Millisecond)
		close(ended)
		return nil, ctx.Err()
	})
	errc := make(chan error, 1)
	go func() {
		_, err := r.Ready(context.Background(), h.sound)
		errc <- err
	}()
	<-started
	release, first := r.Close()
	select {
	case <-ended:
	default:
		t.Fatal("Close returned while the repair still ran")
	}
	if !first {
		t.Fatal("the first Close says it was not first")
	}
	release()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the repair's call: %v, want context.Canceled", err)
	}
	if _, first := r.Close(); first {
		t.Fatal("a second Close says it was first")
	}
	if r.Life().Err() == nil {
		t.Fatal("Life has not ended after Close")
	}
	if _, err := r.Ready(context.Background(), h.sound); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("Ready after Close: %v, want ErrClosed", err)
	}
	if _, err := r.Repair(context.Background(), "again"); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("Repair after Close: %v, want ErrClosed", err)
	}
	if n := h.repairs.Load(); n != 1 {
		t.Fatalf("%d repairs, want 1", n)
	}
}
