// Package dockertest holds the helpers that tests against a real Docker daemon share: a
// client that skips the test when no daemon answers (or fails it when
// AIRLOCK_REQUIRE_DOCKER=1, as CI sets), the busybox test image, and a static airlock binary
// to use as the resident helper.
package dockertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// ImageName is the test image: busybox-static with every applet linked, /etc/passwd with
// root and nobody (65534), /tmp and a world-writable /workspace. .ci/dockerd.sh builds the
// same image.
const ImageName = "airlock-test/busybox:latest"

// Client returns a client for DOCKER_HOST after checking, with a short timeout, that the
// daemon answers. Without one the test is skipped, unless AIRLOCK_REQUIRE_DOCKER=1.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err = cli.Ping(ctx)
		cancel()
		if err != nil {
			_ = cli.Close()
		}
	}
	if err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker daemon required (AIRLOCK_REQUIRE_DOCKER=1) but not reachable at %q: %v", os.Getenv("DOCKER_HOST"), err)
		}
		t.Skipf("no docker daemon at %q: %v (run .ci/dockerd.sh and export DOCKER_HOST=unix:///run/airlock-ci/docker.sock)", os.Getenv("DOCKER_HOST"), err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

var imageOnce struct {
	sync.Mutex
	done bool
}

// Image returns the busybox test image, building it with docker import when it is missing.
func Image(t testing.TB) string {
	t.Helper()
	cli := Client(t)
	imageOnce.Lock()
	defer imageOnce.Unlock()
	if imageOnce.done {
		return ImageName
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ImageName); err == nil {
		imageOnce.done = true
		return ImageName
	}
	root := busyboxRootfs(t)
	cmd := exec.Command("sh", "-c", `tar -C "$1" -c . | docker import -c 'ENV PATH=/bin' - "$2"`, "import", root, ImageName)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker import %s: %v\n%s", ImageName, err, out)
	}
	imageOnce.done = true
	return ImageName
}

// helperBuild is cmd/airlock-helper, static, under the name the tests have always given it.
var helperBuild = buildtest.Program{
	Pkg:    "github.com/airlock-dev/airlock/cmd/airlock-helper",
	Name:   "airlock",
	Prefix: "airlock-helper-bin-",
	Env:    []string{"CGO_ENABLED=0"},
}

// HelperBinary returns a static helper binary (cmd/airlock-helper, the helper a user's airlock
// takes from beside itself), built once per test process, or the one
// AIRLOCK_TEST_HELPER_BINARY names (for when the working tree does not build). A test
// package that reaches it calls buildtest.Cleanup from its TestMain.
func HelperBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("AIRLOCK_TEST_HELPER_BINARY"); p != "" {
		return p
	}
	return helperBuild.Path(t)
}

// Workspace returns a fresh host directory that the container's non-root user can write,
// for mounting as the workspace.
func Workspace(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o777))
	real, err := filepath.EvalSymlinks(dir)
	must(t, err)
	return real
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// RemoveContainers force-removes every container whose name contains prefix: test cleanup,
// best effort, on the daemon DOCKER_HOST names.
func RemoveContainers(prefix string) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", prefix))})
	if err != nil {
		return
	}
	for _, c := range list {
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	}
}

// Runtime is the OCI runtime the Docker tests run under: AIRLOCK_DOCKER_RUNTIME_TEST (CI runs
// the conformance, file-tool and attack tests a second time with "runsc", gVisor), or ""
// for the daemon's default.
func Runtime() string { return os.Getenv("AIRLOCK_DOCKER_RUNTIME_TEST") }

// Config returns the TOML of a Docker environment for a test: the test image, the given
// resident helper binary (empty: [HelperBinary]), a container name prefix of its own (named
// after kind) whose containers are removed when the test ends, auto approvals, the
// [Runtime], and extra appended to [environment.docker]. It also returns the prefix.
func Config(t testing.TB, kind string, timeout int, helperBin, extra string) (toml, prefix string) {
	t.Helper()
	Client(t)
	if helperBin == "" {
		helperBin = HelperBinary(t)
	}
	prefix = fmt.Sprintf("airlock_%s_%d_%d_", kind, os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { RemoveContainers(prefix) })
	if rt := Runtime(); rt != "" {
		extra = fmt.Sprintf("runtime = %q\n", rt) + extra
	}
	return fmt.Sprintf(`[environment]
type = "docker"
timeout = %d
[environment.docker]
image = %q
helper_binary = %q
container_name_prefix = %q
%s
[approvals]
mode = "auto"
`, timeout, Image(t), helperBin, prefix, extra), prefix
}
