package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.Baseliner = (*Env)(nil)

// Baseline times OpenSSH's own fast path against the same host: a ControlMaster
// connection set up once, then `ssh -S SOCKET host true` per command (multiplexed
// sessions). The OpenSSH client serves only this comparison.
func (e *Env) Baseline(ctx context.Context) (*backend.Baseline, error) {
	cli, err := exec.LookPath("ssh")
	if err != nil {
		return nil, errors.New("no OpenSSH client on PATH to compare with")
	}
	dir, err := os.MkdirTemp("", "airlock-bench-ssh-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "master")
	common := []string{"-S", sock, "-p", strconv.Itoa(e.cfg.Port), "-l", e.cfg.User,
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=" + expandHome(e.cfg.KnownHosts),
		"-o", "IdentitiesOnly=yes", "-F", "/dev/null"}
	if e.cfg.KeyPath != "" {
		common = append(common, "-i", expandHome(e.cfg.KeyPath))
	}
	if e.cfg.JumpHost != "" {
		common = append(common, "-J", e.cfg.JumpHost)
	}
	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	master := exec.CommandContext(mctx, cli, append(append([]string{"-M", "-N", "-f", "-o", "ControlPersist=yes"}, common...), e.cfg.Host)...)
	if out, err := master.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("OpenSSH ControlMaster: %w: %s", err, strings.TrimSpace(string(out)))
	}
	stop := func() {
		_ = exec.Command(cli, append(append([]string{"-O", "exit"}, common...), e.cfg.Host)...).Run()
		_ = os.RemoveAll(dir)
	}
	return &backend.Baseline{
		Name: "ssh -S SOCKET host true (OpenSSH ControlMaster)",
		Run: func(ctx context.Context) error {
			cmd := exec.CommandContext(ctx, cli, append(common, e.cfg.Host, "true")...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("ssh: %w: %s", err, strings.TrimSpace(string(out)))
			}
			return nil
		},
		Close: stop,
	}, nil
}
