package docker_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// TestCreateCutShortLeavesNothing: a container create that the daemon carries out after the
// caller gave up waiting (a warm pool closing while a member was being made, a busy daemon)
// must not leave the container behind. A proxy in front of the daemon holds the create back
// and then passes it on whatever the caller does; the caller's context ends meanwhile. Once
// the daemon has answered, no container of the session may be left.
func TestCreateCutShortLeavesNothing(t *testing.T) {
	cli := dockertest.Client(t)
	const hold = 800 * time.Millisecond
	sock := slowCreateProxy(t, cli.DaemonHost(), hold)
	cfg := testConfig(t, t.TempDir(), docker.ModeExec)
	cfg.Host = "unix://" + sock
	cfg.ContainerNamePrefix = prefix + "cut_"

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if env, err := docker.New(ctx, cfg); err == nil {
		_ = env.Close(context.Background())
		t.Fatal("an environment whose context ended during the container's create opened")
	}
	time.Sleep(hold + time.Second) // the held create has reached the daemon and been answered
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("name", cfg.ContainerNamePrefix))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		t.Errorf("left behind after the create was cut short: %v (%s)", c.Names, c.State)
	}
}

// slowCreateProxy serves the Docker API of host on a unix socket of its own, passing every
// request through, but a container create is held back for hold and then passed on whatever
// the caller does meanwhile: what a busy daemon does to a caller that gave up.
func slowCreateProxy(t *testing.T, host string, hold time.Duration) string {
	t.Helper()
	daemon := strings.TrimPrefix(host, "unix://")
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: "docker"})
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", daemon)
		}},
	}
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create") {
			time.Sleep(hold)
			r = r.WithContext(context.WithoutCancel(r.Context()))
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock
}
