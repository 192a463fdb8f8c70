package docker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// TestKillScriptSparesAReusedPID: the kill of a timed-out exec-mode command reads its
// wrapper's PID from a file. When that wrapper ended meanwhile (its own watchdog killed it)
// the PID may already lead another command's group — which must survive; a file naming the
// live wrapper, start time and all, still kills it.
func TestKillScriptSparesAReusedPID(t *testing.T) {
	dockertest.Client(t)
	cfg := DefaultConfig()
	cfg.Image = dockertest.Image(t)
	cfg.ContainerNamePrefix = fmt.Sprintf("airlocktest_%d_kill_", os.Getpid())
	cfg.Volumes = []Volume{{Host: dockertest.Workspace(t), Container: "/workspace"}}
	cfg.Memory = 256 << 20
	cfg.Agent = AgentOff
	cfg.ReuseContainer = false
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e, err := New(ctx, cfg)
	if e != nil {
		t.Cleanup(func() { _ = e.Close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	sh := func(cmd string) string {
		t.Helper()
		res, err := e.Exec(ctx, backend.Request{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	for _, tc := range []struct {
		name  string
		stale bool
	}{{"stale file spares the group", true}, {"live file kills it", false}} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan backend.Result, 1)
			go func() {
				res, _ := e.Exec(ctx, backend.Request{Command: `read -r l < /proc/$$/stat; set -- ${l##*') '}; echo "$3" > /tmp/victim.pgid; sleep 3; echo survived`})
				done <- res
			}()
			var pgid string
			for i := 0; i < 200 && pgid == ""; i++ {
				pgid = sh("cat /tmp/victim.pgid 2>/dev/null")
				time.Sleep(20 * time.Millisecond)
			}
			if pgid == "" {
				t.Fatal("the victim never said its group")
			}
			start := sh("cut -d' ' -f22 /proc/" + pgid + "/stat")
			if tc.stale {
				start = "1" // the start time of another process that had this PID
			}
			sh("echo '" + pgid + " " + start + "' > /tmp/victim.pid; rm -f /tmp/victim.pgid")
			if _, err := e.Exec(ctx, backend.Request{Argv: []string{"/bin/sh", "-c", killScript, "kill", "/tmp/victim.pid", "5"}}); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if survived := string(res.Stdout) == "survived\n"; survived != tc.stale {
				t.Errorf("victim: exit %d stdout %q; want survived=%v", res.ExitCode, res.Stdout, tc.stale)
			}
		})
	}
}
