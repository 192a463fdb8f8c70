package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// Jobs run on SSH (session mode) through the same contract: exit code and output at the
// end, the remote tree killed.
func TestJobsOnSSH(t *testing.T) {
	srv := sshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := ssh.New(ctx, srv.Config)
	if env != nil {
		t.Cleanup(func() { _ = env.Close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	exerciseJobs(t, env, "job-child.pid")
}

// With the resident helper, SSH jobs stream: the helper's live output frames reach the job
// while it runs.
func TestJobsOnSSHHelper(t *testing.T) {
	srv := sshtest.Start(t)
	cfg := srv.Config
	cfg.Mode = ssh.ModeAuto
	cfg.HelperBinary = sshtest.AirlockBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := ssh.New(ctx, cfg)
	if env != nil {
		t.Cleanup(func() { _ = env.Close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := env.Describe(); d.Mode != ssh.ModeHelper {
		t.Fatalf("mode %q (notes %q), want helper", d.Mode, d.Notes)
	}
	exerciseJobs(t, env, "job-child.pid")
	exerciseLiveOutput(t, env, "job-gate")
}
