package ssh_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// BenchmarkExec measures one trivial command per iteration over a kept connection, in each
// mode, against OpenSSH's own multiplexed client on the same sshd.
func BenchmarkExec(b *testing.B) {
	srv := sshtest.Start(b)
	run := func(b *testing.B, cfg ssh.Config) {
		env, err := ssh.New(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer env.Close(context.Background())
		b.ResetTimer()
		for range b.N {
			res, err := env.Exec(context.Background(), backend.Request{Argv: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	}
	b.Run("session", func(b *testing.B) { run(b, srv.Config) })
	b.Run("helper", func(b *testing.B) {
		cfg := srv.Config
		cfg.Mode = ssh.ModeAuto
		cfg.HelperBinary = sshtest.AirlockBinary(b)
		run(b, cfg)
	})
	b.Run("helper-default-build", func(b *testing.B) {
		cfg := srv.Config
		cfg.Mode = ssh.ModeAuto
		cfg.HelperBinary = helpertest.DefaultBuild(b)
		run(b, cfg)
	})
	b.Run("openssh-controlmaster", func(b *testing.B) {
		if _, err := exec.LookPath("ssh"); err != nil {
			b.Skip("no ssh client")
		}
		ctl := filepath.Join(b.TempDir(), "ctl")
		args := []string{"-S", ctl, "-o", "ControlMaster=auto", "-o", "ControlPersist=60",
			"-o", "UserKnownHostsFile=" + srv.Config.KnownHosts, "-o", "StrictHostKeyChecking=yes",
			"-o", "BatchMode=yes", "-i", srv.Config.KeyPath, "-p", strconv.Itoa(srv.Port),
			srv.User + "@" + srv.Host}
		if out, err := exec.Command("ssh", append(args, "true")...).CombinedOutput(); err != nil {
			b.Fatalf("ssh: %v: %s", err, out)
		}
		defer exec.Command("ssh", "-S", ctl, "-O", "exit", "x").Run()
		b.ResetTimer()
		for range b.N {
			if out, err := exec.Command("ssh", append(args, "true")...).CombinedOutput(); err != nil {
				b.Fatalf("ssh: %v: %s", err, out)
			}
		}
	})
}
