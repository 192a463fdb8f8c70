package ssh_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// modes runs fn once per way of starting commands.
func modes(t *testing.T, srv *sshtest.Server, fn func(t *testing.T, cfg ssh.Config)) {
	t.Run("session", func(t *testing.T) { fn(t, srv.Config) })
	t.Run("helper", func(t *testing.T) {
		cfg := srv.Config
		cfg.Mode = ssh.ModeAuto
		cfg.HelperBinary = sshtest.AirlockBinary(t)
		fn(t, cfg)
	})
}

// execAsync starts req and returns a channel with its outcome.
func execAsync(env backend.Environment, req backend.Request) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := env.Exec(ctx, req)
		done <- err
	}()
	return done
}

func hasNote(res backend.Result, word string) bool {
	for _, n := range res.Notes {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// TestSurvivesSSHDRestart kills sshd and every connection while a command runs, starts it
// again, and checks that the call in flight fails (not hangs) and the next one reconnects.
func TestSurvivesSSHDRestart(t *testing.T) {
	srv := sshtest.Start(t)
	modes(t, srv, func(t *testing.T, cfg ssh.Config) {
		env := newEnv(t, cfg)
		mode := env.Describe().Mode
		if res := mustExec(t, env, backend.Request{Command: "echo warm"}); hasNote(res, "reconnected") {
			t.Fatalf("first call reconnected: %v", res.Notes)
		}
		inflight := execAsync(env, backend.Request{Command: "echo started; sleep 30"})
		time.Sleep(500 * time.Millisecond)
		srv.Restart(t)
		select {
		case err := <-inflight:
			if !errors.Is(err, backend.ErrUnavailable) {
				t.Fatalf("call in flight: err = %v, want ErrUnavailable", err)
			}
			t.Logf("in-flight call: %v", err)
		case <-time.After(15 * time.Second):
			t.Fatal("call in flight hung after the connection died")
		}
		res := mustExec(t, env, backend.Request{Command: "echo again"})
		if string(res.Stdout) != "again\n" || !hasNote(res, "reconnected") {
			t.Errorf("after restart: stdout %q notes %q", res.Stdout, res.Notes)
		}
		if got := env.Describe().Mode; got != mode {
			t.Errorf("mode after reconnect = %q, want %q", got, mode)
		}
		if res := mustExec(t, env, backend.Request{Command: "echo third"}); hasNote(res, "reconnected") {
			t.Errorf("third call reconnected again: %v", res.Notes)
		}
	})
}

// TestNetworkCut runs against an sshd in a network namespace, cuts the link under a running
// command and brings it back.
func TestNetworkCut(t *testing.T) {
	ns := sshtest.NewNetns(t)
	srv := sshtest.Start(t, sshtest.InNetns(ns))
	modes(t, srv, func(t *testing.T, cfg ssh.Config) {
		cfg.KeepaliveInterval = backend.Duration(300 * time.Millisecond)
		env := newEnv(t, cfg)
		if out := string(mustExec(t, env, backend.Request{Command: `printf %s "$SSH_CONNECTION$SSH_CLIENT"`}).Stdout); out != "" {
			t.Errorf("SSH_CONNECTION leaked into the command: %q", out)
		}
		inflight := execAsync(env, backend.Request{Command: "sleep 30"})
		time.Sleep(300 * time.Millisecond)
		ns.SetLink(t, false)
		cut := time.Now()
		select {
		case err := <-inflight:
			if !errors.Is(err, backend.ErrUnavailable) {
				t.Fatalf("call in flight: err = %v, want ErrUnavailable", err)
			}
			t.Logf("in-flight call ended %v after the cut: %v", time.Since(cut).Round(time.Millisecond), err)
		case <-time.After(20 * time.Second):
			t.Fatal("call in flight hung after the link was cut")
		}
		// While the link is down, a call gives up when its context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		_, err := env.Exec(ctx, backend.Request{Command: "true"})
		cancel()
		if !errors.Is(err, backend.ErrUnavailable) {
			t.Errorf("call while cut: err = %v, want ErrUnavailable", err)
		}
		ns.SetLink(t, true)
		res := mustExec(t, env, backend.Request{Command: "echo back"})
		if string(res.Stdout) != "back\n" || !hasNote(res, "reconnected") {
			t.Errorf("after the link came back: %q %q", res.Stdout, res.Notes)
		}
	})
}

// TestConformanceNetns runs the conformance suite across a real network stack.
func TestConformanceNetns(t *testing.T) {
	ns := sshtest.NewNetns(t)
	srv := sshtest.Start(t, sshtest.InNetns(ns))
	backendtest.Run(t, func(t *testing.T) backend.Environment { return newEnv(t, srv.Config) })
}

// TestJumpHost reaches the namespaced sshd through a loopback one.
func TestJumpHost(t *testing.T) {
	ns := sshtest.NewNetns(t)
	target := sshtest.Start(t, sshtest.InNetns(ns))
	jump := sshtest.Start(t)
	cfg := target.Config
	// One known_hosts and one key for both hosts, as with ProxyJump.
	cfg.KnownHosts = combineKnownHosts(t, target, jump)
	authorize(t, jump, cfg.KeyPath)
	cfg.JumpHost = jump.User + "@" + jump.Addr()
	env := newEnv(t, cfg)
	if out := mustExec(t, env, backend.Request{Command: `echo "$HOME"; hostname -I 2>/dev/null || ip -4 -o addr 2>/dev/null`}).Stdout; !strings.Contains(string(out), ns.PeerIP) {
		t.Logf("addresses seen remotely: %q", out)
	}
	if d := env.Describe(); !strings.Contains(d.Target, "via") {
		t.Errorf("target %q does not mention the jump host", d.Target)
	}
	// The jump host's key is checked like the target's.
	cfg.KnownHosts = combineKnownHosts(t, target)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := ssh.New(ctx, cfg)
	var he *ssh.HostKeyError
	if !errors.As(err, &he) || he.Host != jump.Addr() {
		t.Fatalf("unknown jump host: err = %v, want a HostKeyError for %s", err, jump.Addr())
	}
}

// TestManyConcurrentCalls sends 50 calls at once over one connection.
func TestManyConcurrentCalls(t *testing.T) {
	srv := sshtest.Start(t)
	modes(t, srv, func(t *testing.T, cfg ssh.Config) {
		env := newEnv(t, cfg)
		const n = 50
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				want := fmt.Sprintf("call-%d-%s", i, strings.Repeat("q", i*300))
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				res, err := env.Exec(ctx, backend.Request{
					Command: `cat; printf '%s\n' "$WANT"; echo "e$I" >&2`,
					Env:     map[string]string{"WANT": want, "I": strconv.Itoa(i)},
					Stdin:   strings.NewReader(want + "|"),
				})
				switch {
				case err != nil:
					errs <- fmt.Errorf("call %d: %w", i, err)
				case string(res.Stdout) != want+"|"+want+"\n" || string(res.Stderr) != "e"+strconv.Itoa(i)+"\n" || res.ExitCode != 0:
					errs <- fmt.Errorf("call %d: mixed output %.60q / %q exit %d", i, res.Stdout, res.Stderr, res.ExitCode)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}
