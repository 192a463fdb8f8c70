package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// BenchmarkHelperRunAs is the cost of a command through a helper that keeps root as its real
// user and starts commands from its spawner thread (user 65534:65534), beside one through a
// helper that runs as the commands' user (the same user, by name), interleaved in one loop.
func BenchmarkHelperRunAs(b *testing.B) {
	ws := dockertest.Workspace(b)
	newBenchEnv := func(user string) *docker.Env {
		cfg := testConfig(b, ws, docker.ModeHelper)
		cfg.ReuseContainer = false
		cfg.User = user
		return newEnv(b, cfg)
	}
	envs := []*docker.Env{newBenchEnv("65534:65534"), newBenchEnv("nobody")}
	var spent [2]time.Duration
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, env := range envs {
			start := time.Now()
			res, err := env.Exec(ctx, backend.Request{Argv: []string{"/bin/true"}})
			spent[j] += time.Since(start)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("exec: %v %+v", err, res)
			}
		}
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "ns/run-as")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "ns/same-user")
}
