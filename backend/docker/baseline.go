package docker

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

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
