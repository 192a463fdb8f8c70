package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// Attacks from a command on the resident helper that starts later commands, found in review:
// the command runs as the helper's own user inside the container.

func helperEnv(t *testing.T) *docker.Env {
	t.Helper()
	dockertest.Client(t) // skips, or fails under AIRLOCK_REQUIRE_DOCKER, without a daemon
	prefix := fmt.Sprintf("airlock_itag_%d_%d_", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dockertest.RemoveContainers(prefix) })
	cfg := docker.DefaultConfig()
	cfg.Image = dockertest.Image(t)
	cfg.ContainerNamePrefix = prefix
	cfg.ReuseContainer = false
	cfg.HelperBinary = airlockBin
	cfg.DefaultTimeout = time.Minute
	cfg.KillGrace = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := docker.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	if env.Describe().Mode != docker.ModeHelper {
		t.Fatalf("mode %s: %v", env.Describe().Mode, env.Describe().Notes)
	}
	return env
}

func mustRun(t *testing.T, env backend.Environment, req backend.Request) backend.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := env.Exec(ctx, req)
	if err != nil {
		t.Fatalf("%q: %v", req.Command, err)
	}
	return res
}

// printfFrame renders a helper frame as a printf format of octal escapes.
func printfFrame(typ byte, id uint32, payload string) string {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(5+len(payload)))
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, id)
	b = append(b, payload...)
	var s strings.Builder
	for _, c := range b {
		fmt.Fprintf(&s, `\%03o`, c)
	}
	return s.String()
}

const findHelper = `for d in /proc/[0-9]*; do case "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" in "/tmp/.airlock/helper-"*|"/.airlock/helper-"*) p=${d#/proc/};; esac; done`

// TestAgentStreamCannotBeForged: a command cannot open the helper's stdout through /proc to
// answer a later command in its place.
func TestAgentStreamCannotBeForged(t *testing.T) {
	t.Parallel()
	env := helperEnv(t)
	out := "FORGED by an earlier command\n"
	exit := fmt.Sprintf(`{"exit_code":0,"stdout_bytes":%d,"stderr_bytes":0,"duration_ns":1}`, len(out))
	forge := printfFrame('O', 2, out) + printfFrame('Q', 2, exit)
	res := mustRun(t, env, backend.Request{Command: findHelper + `; echo "helper=$p"; printf "` + forge + `" > /proc/$p/fd/1 && echo WROTE; cat /proc/$p/fd/0 </dev/null & sleep 0.2; kill $! 2>/dev/null; true`})
	if !strings.Contains(string(res.Stdout), "helper=") || strings.Contains(string(res.Stdout), "helper=\n") {
		t.Fatalf("test did not find the helper: %q %q", res.Stdout, res.Stderr)
	}
	t.Logf("attack: %q %q", res.Stdout, res.Stderr)
	if strings.Contains(string(res.Stdout), "WROTE") {
		t.Errorf("a command wrote into the helper's stdout: %q", res.Stdout)
	}
	res = mustRun(t, env, backend.Request{Command: "echo real output"})
	if string(res.Stdout) != "real output\n" {
		t.Errorf("later command answered by someone else: %q", res.Stdout)
	}
}

// TestFrozenAgentDoesNotHang: a command that freezes the helper (SIGSTOP, same user) cannot
// hold later calls past their timeout; the helper is given up and replaced.
func TestFrozenAgentDoesNotHang(t *testing.T) {
	t.Parallel()
	env := helperEnv(t)
	mustRun(t, env, backend.Request{Command: findHelper + `; setsid sh -c 'sleep 0.5; kill -STOP $0' "$p" </dev/null >/dev/null 2>&1 & true`})
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	_, err := env.Exec(ctx, backend.Request{Command: "echo hi", Timeout: 2 * time.Second})
	if ctx.Err() != nil {
		t.Fatalf("exec held past its context (%s): %v", time.Since(start), err)
	}
	// Whatever that call said, the next one works on a fresh helper or falls back.
	res := mustRun(t, env, backend.Request{Command: "echo again", Timeout: 10 * time.Second})
	if string(res.Stdout) != "again\n" {
		t.Errorf("after a frozen helper: %q %v", res.Stdout, res.Notes)
	}
}

// TestSetsidInContainerDoesNotEscape: a process that leaves its command's process group is
// still killed when the command times out.
func TestSetsidInContainerDoesNotEscape(t *testing.T) {
	t.Parallel()
	env := helperEnv(t)
	res := mustRun(t, env, backend.Request{
		Command: `setsid sh -c 'exec sleep 4242' </dev/null >/dev/null 2>&1 & sleep 100`,
		Timeout: time.Second,
	})
	if !res.TimedOut {
		t.Fatalf("not timed out: %+v", res)
	}
	for i := 0; i < 50; i++ {
		res = mustRun(t, env, backend.Request{Command: `ps -o args | grep '[s]leep 4242' || true`})
		if strings.TrimSpace(string(res.Stdout)) == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("setsid'd process survived the timeout: %q", res.Stdout)
}
