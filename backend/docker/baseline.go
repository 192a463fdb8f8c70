package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.Baseliner = (*Env)(nil)

// Baseline times `docker exec CONTAINER true` with the docker CLI against the same daemon
// and container: what a command costs without Airlock's helper. The CLI serves only this
// comparison; the backend itself speaks the Engine API.
func (e *Env) Baseline(ctx context.Context) (*backend.Baseline, error) {
	cli, err := exec.LookPath("docker")
	if err != nil {
		return nil, errors.New("no docker CLI on PATH to compare with")
	}
	id := e.ContainerID()
	if id == "" {
		return nil, errors.New("no container yet")
	}
	return &backend.Baseline{
		Name: "docker exec CONTAINER true (CLI)",
		Run: func(ctx context.Context) error {
			cmd := exec.CommandContext(ctx, cli, "-H", e.host, "exec", "-u", e.cfg.User, id, "true")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("docker exec: %w: %s", err, strings.TrimSpace(string(out)))
			}
			return nil
		},
		Close: func() {},
	}, nil
}

var _ backend.StartBaseliner = (*Env)(nil)

// StartBaseline times what opening a session stands in for, without Airlock: a container of
// this environment's spec (image, limits, mounts, hardening) created and started, then one
// `docker exec` of true in it, through the Engine API with the same client library. No
// helper is installed and nothing is checked. Reset removes the containers, untimed, as a
// session's close is not timed either; they are named with the prefix and labelled like
// the environment's own, so gc finds any a killed bench leaves.
func (e *Env) StartBaseline(ctx context.Context) (*backend.Baseline, error) {
	var mu sync.Mutex
	var made []string
	reset := func(ctx context.Context) error {
		mu.Lock()
		ids := made
		made = nil
		mu.Unlock()
		var errs []error
		for _, id := range ids {
			errs = append(errs, e.remove(ctx, id))
		}
		return errors.Join(errs...)
	}
	run := func(ctx context.Context) error {
		resp, err := e.createContainer(ctx, e.cfg.ContainerNamePrefix+"raw-"+newSessionID())
		if err != nil {
			return fmt.Errorf("docker create: %w", err)
		}
		mu.Lock()
		made = append(made, resp.ID)
		mu.Unlock()
		if err := e.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
			return fmt.Errorf("docker start: %w", err)
		}
		return e.execTrue(ctx, resp.ID)
	}
	return &backend.Baseline{
		Name:  "docker create + start + exec true (Engine API, same spec, no helper)",
		Run:   run,
		Reset: reset,
		Close: func() { _ = reset(context.Background()) },
	}, nil
}

// execTrue runs true in a container with one exec, attached, and waits for it to end.
func (e *Env) execTrue(ctx context.Context, id string) error {
	x, err := e.cli.ContainerExecCreate(ctx, id, container.ExecOptions{User: e.cfg.User, Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return fmt.Errorf("docker exec create: %w", err)
	}
	hij, err := e.cli.ContainerExecAttach(ctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("docker exec attach: %w", err)
	}
	defer hij.Close()
	if _, err := io.Copy(io.Discard, hij.Reader); err != nil {
		return fmt.Errorf("docker exec: %w", err)
	}
	info, err := e.cli.ContainerExecInspect(ctx, x.ID)
	switch {
	case err != nil:
		return fmt.Errorf("docker exec inspect: %w", err)
	case info.ExitCode != 0:
		return fmt.Errorf("docker exec true: exit %d", info.ExitCode)
	}
	return nil
}
