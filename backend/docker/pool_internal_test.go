package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// Twenty claimers of one pool container, as twenty processes would be (each its own Env
// on the same container), race on the daemon: exactly one wins, the others get ErrClaimed,
// and closing a loser leaves the winner's container alone.
func TestClaimIsAtomic(t *testing.T) {
	dockertest.Client(t)
	cfg := DefaultConfig()
	cfg.Image = dockertest.Image(t)
	cfg.HelperBinary = dockertest.HelperBinary(t)
	cfg.ContainerNamePrefix = fmt.Sprintf("airlocktest_%d_claim_", time.Now().UnixNano()%1e9)
	cfg.SetPoolSize(1)
	cfg.PoolMember = true
	t.Cleanup(func() { dockertest.RemoveContainers(cfg.ContainerNamePrefix) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	member, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.Close(context.Background()) })
	const claimers = 20
	handles := make([]*Env, claimers)
	for i := range handles {
		handles[i] = &Env{cfg: member.cfg, cli: member.cli, log: member.log, session: member.session,
			name: member.name, resident: member.resident, containerID: member.containerID}
		handles[i].rep = backend.NewRepairer(member.log, handles[i].logName, handles[i].mended, handles[i].prepare)
	}
	errs := make([]error, claimers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = h.Claim(ctx, fmt.Sprint("s-", i))
		}()
	}
	close(start)
	wg.Wait()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case !errors.Is(err, backend.ErrClaimed):
			t.Errorf("claimer %d: %v, want ErrClaimed", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d claimers won, want exactly 1", winners)
	}
	// A loser's Close keeps its hands off the container (it shares the client and helper
	// with the winner here, so only the removal is checked).
	for i, h := range handles {
		if errs[i] != nil {
			h.mu.Lock()
			lost := h.claimLost
			h.mu.Unlock()
			if !lost {
				t.Errorf("claimer %d lost but would remove the container on close", i)
			}
		}
	}
	info, err := member.inspect(ctx, member.containerID)
	if err != nil || info.Name != "/"+member.sessionName() {
		t.Errorf("claimed container: %q %v, want %q", info.Name, err, member.sessionName())
	}
}
