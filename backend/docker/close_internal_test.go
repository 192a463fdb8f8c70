package docker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// A Close that comes while a call is repairing the environment (here: recreating a container
// removed from outside), before or after the repair made the new container, cancels and
// waits for the repair and removes what it made, rather than leaving it behind.
func TestCloseDuringRepairRemovesWhatItCreated(t *testing.T) {
	for _, stage := range []string{"ensure", "ensured"} {
		t.Run(stage, func(t *testing.T) {
			cli := dockertest.Client(t)
			cfg := DefaultConfig()
			cfg.Image = dockertest.Image(t)
			cfg.ContainerNamePrefix = fmt.Sprintf("airlocktest_%d_close_", os.Getpid())
			cfg.Volumes = []Volume{{Host: dockertest.Workspace(t), Container: "/workspace"}}
			cfg.Memory = 256 << 20
			cfg.Helper = HelperOff
			cfg.ReuseContainer = false
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			e, err := New(ctx, cfg)
			t.Cleanup(func() {
				if e != nil {
					_ = e.Close(context.Background())
					_ = removeContainer(context.Background(), cli, e.name)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := cli.ContainerRemove(ctx, e.ContainerID(), container.RemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}

			reached := make(chan struct{})
			e.prepareHook = func(s string) {
				if s != stage {
					return
				}
				close(reached)
				for deadline := time.Now().Add(20 * time.Second); !e.rep.Closed() && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond) // let a Close that does not wait run ahead
			}
			execErr := make(chan error, 1)
			go func() {
				_, err := e.Exec(ctx, backend.Request{Command: "echo hi"})
				execErr <- err
			}()
			select {
			case <-reached:
			case err := <-execErr:
				t.Fatalf("Exec returned before repairing: %v", err)
			case <-ctx.Done():
				t.Fatal("no repair")
			}
			if err := e.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := <-execErr; err == nil {
				t.Errorf("the call racing Close succeeded")
			} else {
				t.Logf("the call racing Close: %v", err)
			}
			list, err := cli.ContainerList(ctx, container.ListOptions{All: true,
				Filters: filters.NewArgs(filters.Arg("label", labelSession+"="+e.session))})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range list {
				t.Errorf("container %s %v of the closed session outlived Close", shortID(c.ID), c.Names)
			}
		})
	}
}
