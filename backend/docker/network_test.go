package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/urlguard"
)

// Every address these tests touch is loopback or on a Docker network they create.

type fixedNames map[string]string

func (n fixedNames) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := n[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// hostServer is an HTTP server on the host at addr that answers with its name.
func hostServer(t testing.TB, addr, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

type denialLog struct {
	mu   sync.Mutex
	list []egress.Denial
}

func (d *denialLog) add(x egress.Denial) { d.mu.Lock(); d.list = append(d.list, x); d.mu.Unlock() }

// proxyVia is the shell prelude that splits HTTP_PROXY into $ph and $pp, for nc.
const proxyVia = `p=${HTTP_PROXY#http://}; ph=${p%:*}; pp=${p##*:}; `

// proxyStarter is an EgressProxy for tests: the runtime's proxy (egress.New with g), its
// refusals collected in denials, and the address it was asked to listen on.
func proxyStarter(t testing.TB, g *urlguard.Guard, denials *denialLog, listened *netip.Addr) docker.EgressProxy {
	return func(ctx context.Context, ip netip.Addr) (docker.Egress, error) {
		*listened = ip
		p, err := egress.New(g, egress.WithOnDenied(denials.add))
		if err != nil {
			return docker.Egress{}, err
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			return docker.Egress{}, err
		}
		go p.Serve(ln)
		return docker.Egress{URL: "http://" + ln.Addr().String(), Stop: p.Close, ServeCall: p.ServeCall}, nil
	}
}

// allowlistEnv starts a helper-mode environment in allowlist mode with the proxy start,
// its commands run as user ("" for the default: the workspace's owner).
func allowlistEnv(t testing.TB, start docker.EgressProxy, user string, adjust ...func(*docker.Config)) *docker.Env {
	t.Helper()
	ws := t.TempDir()
	cfg := testConfig(t, ws, docker.ModeHelper)
	cfg.ReuseContainer = false
	if user != "" {
		if err := os.Chmod(ws, 0o777); err != nil {
			t.Fatal(err)
		}
		cfg.User = user
	}
	for _, f := range adjust {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	env, err := docker.New(ctx, cfg, docker.WithEgressProxy(start))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	if d := env.Describe(); d.Mode != docker.ModeHelper {
		t.Fatalf("mode %q, want the helper: %q", d.Mode, d.Notes)
	}
	return env
}

// socketDir is the host directory of the environment's egress sockets, from its notes.
func socketDir(t *testing.T, env *docker.Env) string {
	t.Helper()
	for _, n := range env.Describe().Notes {
		if i := strings.Index(n, "a socket per command in "); i >= 0 {
			return n[i+len("a socket per command in "):]
		}
	}
	t.Fatalf("Describe notes do not name the socket directory: %q", env.Describe().Notes)
	return ""
}

func TestNetworkAllowlistThroughProxy(t *testing.T) {
	allowed := hostServer(t, "127.0.0.1:0", "allowed-server")
	other := hostServer(t, "127.0.0.1:0", "other-server")
	_, allowedPort, _ := net.SplitHostPort(allowed)
	_, otherPort, _ := net.SplitHostPort(other)

	// Loopback is let through by the test-only allowance so that the proxy can reach the
	// servers above; the allowlist names allowed.test only.
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test"}},
		urlguard.WithResolver(fixedNames{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}), urlguard.AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	denials := &denialLog{}
	var listened netip.Addr
	env := allowlistEnv(t, proxyStarter(t, g, denials, &listened), "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The proxy's own port is on the host's loopback, which the container does not share:
	// the container reaches it only through its sockets.
	if !listened.IsLoopback() {
		t.Fatalf("proxy listened on %v, want the host's loopback", listened)
	}
	dir := socketDir(t, env)

	get := func(hostport string) string {
		return sh(t, env, proxyVia+fmt.Sprintf(`(printf 'GET http://%s/ HTTP/1.0\r\nHost: %s\r\n\r\n'; sleep 2) | nc -w 5 "$ph" "$pp" 2>&1; echo`, hostport, hostport))
	}
	if out := get("allowed.test:" + allowedPort); !strings.Contains(out, " 200 ") || !strings.Contains(out, "allowed-server") {
		t.Fatalf("allowlisted server through the proxy: %q", out)
	}
	// A real client that reads the variables by itself (busybox wget: http_proxy).
	if out := sh(t, env, "wget -q -O - http://allowed.test:"+allowedPort+"/ 2>&1"); out != "allowed-server" {
		t.Fatalf("wget through the proxy variables: %q", out)
	}
	if out := get("other.test:" + otherPort); !strings.Contains(out, " 403 ") || !strings.Contains(out, "not_allowlisted") || strings.Contains(out, "other-server") {
		t.Fatalf("server not on the allowlist: %q", out)
	}
	// Run as call "call-42": its command's proxy port leads to a socket of its call's own,
	// so the refusal names the call.
	res, err := env.Exec(backend.WithCall(ctx, "call-42"), backend.Request{Command: proxyVia +
		`printf 'CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n' | nc -w 5 "$ph" "$pp" 2>&1; echo`})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Stdout); !strings.Contains(out, " 403 ") || !strings.Contains(out, "metadata") {
		t.Fatalf("CONNECT to the metadata address: %q %q", out, res.Stderr)
	}
	// Without the proxy there is no way out: the host's loopback servers are not the
	// container's loopback, and the container has no other interface.
	if out := sh(t, env, "nc -w 3 127.0.0.1 "+allowedPort+" </dev/null 2>&1; echo rc=$?"); strings.Contains(out, "allowed-server") || !strings.Contains(out, "rc=1") {
		t.Fatalf("direct connection: %q", out)
	}
	if out := sh(t, env, "ls /sys/class/net"); out != "lo" {
		t.Fatalf("interfaces: %q, want only lo", out)
	}
	out := sh(t, env, `echo "$HTTP_PROXY|$HTTPS_PROXY|$ALL_PROXY|$http_proxy|$https_proxy|$all_proxy|$NO_PROXY|$no_proxy"`)
	parts := strings.Split(out, "|")
	if len(parts) != 8 || !strings.HasPrefix(parts[0], "http://127.0.0.1:") || parts[6] != "" || parts[7] != "" {
		t.Fatalf("proxy variables: %q", out)
	}
	for _, p := range parts[1:6] {
		if p != parts[0] {
			t.Fatalf("proxy variables differ: %q", out)
		}
	}
	denials.mu.Lock()
	got := append([]egress.Denial(nil), denials.list...)
	denials.mu.Unlock()
	if len(got) != 2 || got[0].Reason != urlguard.NotAllowlisted || got[0].CallID != "" || got[0].Unattributed == "" ||
		got[1].Reason != urlguard.Metadata || got[1].Host != "169.254.169.254" || got[1].Port != 80 || got[1].CallID != "call-42" {
		t.Fatalf("denials: %+v", got)
	}
	// Two calls at once: each refusal lands on the call whose command made it.
	denials.mu.Lock()
	denials.list = nil
	denials.mu.Unlock()
	var wg sync.WaitGroup
	for _, call := range []string{"call-a", "call-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := call + ".test:" + otherPort
			res, err := env.Exec(backend.WithCall(ctx, call), backend.Request{Command: proxyVia + fmt.Sprintf(
				`sleep 1; (printf 'GET http://%s/ HTTP/1.0\r\nHost: %s\r\n\r\n'; sleep 1) | nc -w 5 "$ph" "$pp" 2>&1; echo`, host, host)})
			if err != nil || !strings.Contains(string(res.Stdout), " 403 ") {
				t.Errorf("%s: %v %q", call, err, res.Stdout)
			}
		}()
	}
	wg.Wait()
	denials.mu.Lock()
	got = append([]egress.Denial(nil), denials.list...)
	denials.mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("concurrent denials: %+v", got)
	}
	for _, d := range got {
		if d.Host != d.CallID+".test" {
			t.Errorf("refusal of %s under call %q", d.Host, d.CallID)
		}
	}

	// Each command's socket went away with it; Close removes the directory.
	if left, _ := filepath.Glob(filepath.Join(dir, "*.sock")); len(left) != 0 {
		t.Fatalf("sockets left after their commands: %q", left)
	}
	if err := env.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket directory %s after Close: %v", dir, err)
	}
}

// TestNetworkAllowlistNoHostService: a host service listening on every address (0.0.0.0) —
// a developer's database, an admin port — cannot be reached from an allowlist container
// directly by IP, not on the gateway address of a Docker network (the way out an internal
// network gave), not on loopback; the same server is reachable through the proxy when the
// allowlist names it. A container on that network in open mode reaches it directly, so the
// server really answers there.
func TestNetworkAllowlistNoHostService(t *testing.T) {
	netName, gw, _ := testNetwork(t)
	anyAddr := hostServer(t, "0.0.0.0:0", "host-service")
	_, port, _ := net.SplitHostPort(anyAddr)
	fetch := func(env backend.Environment, host string) string {
		return sh(t, env, fmt.Sprintf(`(printf 'GET / HTTP/1.0\r\n\r\n'; sleep 1) | nc -w 3 %s %s 2>&1; echo rc=$?`, host, port))
	}

	open := testConfig(t, t.TempDir(), docker.ModeExec)
	open.ReuseContainer = false
	open.Network = netName
	if out := fetch(newEnv(t, open), gw.String()); !strings.Contains(out, "host-service") {
		t.Fatalf("open: the host service on the network's gateway: %q", out)
	}

	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"db.test"}, AllowPrivate: true},
		urlguard.WithResolver(fixedNames{"db.test": gw.String()}))
	if err != nil {
		t.Fatal(err)
	}
	var listened netip.Addr
	// As nobody, the user commands run as when the workspace's owner has no account in the
	// image: the socket directory and sockets must let it connect.
	env := allowlistEnv(t, proxyStarter(t, g, &denialLog{}, &listened), "65534:65534")
	if out := sh(t, env, "id -u; ls /.airlock-egress >/dev/null 2>&1 || echo unlistable"); out != "65534\nunlistable" {
		t.Fatalf("as nobody: %q", out)
	}
	for _, host := range []string{gw.String(), "127.0.0.1"} {
		if out := fetch(env, host); strings.Contains(out, "host-service") || strings.Contains(out, "rc=0") {
			t.Fatalf("allowlist: the host service was reachable directly at %s: %q", host, out)
		}
	}
	out := sh(t, env, proxyVia+fmt.Sprintf(`(printf 'GET http://db.test:%s/ HTTP/1.0\r\nHost: db.test\r\n\r\n'; sleep 2) | nc -w 5 "$ph" "$pp" 2>&1; echo`, port))
	if !strings.Contains(out, " 200 ") || !strings.Contains(out, "host-service") {
		t.Fatalf("allowlist: the named host service through the proxy: %q", out)
	}
}

// TestNetworkAllowlistReadOnlyRootfs: the socket directory's mount point needs no writable
// root filesystem.
func TestNetworkAllowlistReadOnlyRootfs(t *testing.T) {
	srv := hostServer(t, "127.0.0.1:0", "ro-server")
	_, port, _ := net.SplitHostPort(srv)
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test"}},
		urlguard.WithResolver(fixedNames{"allowed.test": "127.0.0.1"}), urlguard.AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	var listened netip.Addr
	env := allowlistEnv(t, proxyStarter(t, g, &denialLog{}, &listened), "", func(c *docker.Config) { c.ReadOnlyRootfs = true })
	if out := sh(t, env, "touch /rootfs-probe 2>/dev/null && echo writable; wget -q -O - http://allowed.test:"+port+"/ 2>&1"); out != "ro-server" {
		t.Fatalf("read-only rootfs: %q", out)
	}
}

// TestNetworkAllowlistNeedsHelper: allowlist is refused, with the reason and the way to
// choose, where the helper that relays to the proxy cannot run; nothing is left behind.
func TestNetworkAllowlistNeedsHelper(t *testing.T) {
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test"}})
	if err != nil {
		t.Fatal(err)
	}
	var listened netip.Addr
	off := testConfig(t, t.TempDir(), docker.ModeExec)
	off.ReuseContainer = false
	off.ContainerNamePrefix = prefix + "nohelper_"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := docker.New(ctx, off, docker.WithEgressProxy(proxyStarter(t, g, &denialLog{}, &listened)))
	if err == nil {
		env.Close(ctx)
		t.Fatal("allowlist without the helper was accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, `helper = "off"`) || !strings.Contains(msg, `mode = "none"`) {
		t.Fatalf("error does not say why and how to choose: %v", err)
	}
	if listened.IsValid() {
		t.Fatal("the proxy was started for a refused environment")
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), off.ContainerNamePrefix+"egress-*")); len(left) != 0 {
		t.Fatalf("left behind: %q", left)
	}
}

// TestNetworkAllowlistHelperGone: where the helper stops for good or never answers, an
// allowlist environment refuses commands (or refuses to start) with the reason, rather than
// run them as one docker exec each without the relay.
func TestNetworkAllowlistHelperGone(t *testing.T) {
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("stopped twice", func(t *testing.T) {
		var listened netip.Addr
		env := allowlistEnv(t, proxyStarter(t, g, &denialLog{}, &listened), "")
		killHelper := func() {
			t.Helper()
			out, err := exec.Command("docker", "exec", env.ContainerID(), "sh", "-c",
				`for p in /proc/[0-9]*; do case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in /.airlock/helper-*) kill -KILL ${p#/proc/};; esac; done`).CombinedOutput()
			if err != nil {
				t.Fatalf("kill helper: %v %s", err, out)
			}
			time.Sleep(300 * time.Millisecond)
		}
		killHelper()
		if out := sh(t, env, "echo one"); out != "one" {
			t.Fatalf("after the first restart: %q", out)
		}
		killHelper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := 0; i < 2; i++ {
			res, err := env.Exec(ctx, backend.Request{Command: "echo ran"})
			if err == nil || !strings.Contains(err.Error(), "needs the resident helper") || strings.Contains(string(res.Stdout), "ran") {
				t.Fatalf("exec %d without the helper: %v %q", i, err, res.Stdout)
			}
			t.Logf("refused: %v", err)
		}
	})
	t.Run("not a helper", func(t *testing.T) {
		dyn, err := exec.LookPath("ls")
		if err != nil {
			t.Skip(err)
		}
		cfg := testConfig(t, t.TempDir(), docker.ModeHelper)
		cfg.ReuseContainer = false
		cfg.HelperBinary = dyn
		var listened netip.Addr
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		env, err := docker.New(ctx, cfg, docker.WithEgressProxy(proxyStarter(t, g, &denialLog{}, &listened)))
		if err == nil {
			env.Close(ctx)
			t.Fatal("allowlist with a binary that is no helper was accepted")
		}
		if !strings.Contains(err.Error(), "needs the resident helper") || !strings.Contains(err.Error(), "helper did not start") {
			t.Fatalf("error: %v", err)
		}
		t.Logf("refused: %v", err)
	})
}

// testNetwork creates a labelled bridge network for one test and a server container on it;
// it returns the network's name, its gateway and the server's address.
func testNetwork(t testing.TB) (name string, gateway netip.Addr, server string) {
	t.Helper()
	cli := dockertest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name = fmt.Sprintf("%snet_%d", prefix, time.Now().UnixNano())
	resp, err := cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: map[string]string{"dev.airlock.test": "egress"}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cli.NetworkInspect(ctx, resp.ID, network.InspectOptions{})
	if err != nil || len(info.IPAM.Config) == 0 {
		t.Fatalf("inspect test network: %v", err)
	}
	gateway = netip.MustParseAddr(info.IPAM.Config[0].Gateway)
	c, err := cli.ContainerCreate(ctx, &container.Config{
		Image:  dockertest.Image(t),
		Cmd:    []string{"sh", "-c", "mkdir -p /tmp/www && echo open-server > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"},
		Labels: map[string]string{"dev.airlock.test": "egress"},
	}, &container.HostConfig{NetworkMode: container.NetworkMode(name)}, nil, nil, name+"_server")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cli.ContainerRemove(cctx, c.ID, container.RemoveOptions{Force: true})
		_ = cli.NetworkRemove(cctx, resp.ID)
	})
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ci, err := cli.ContainerInspect(ctx, c.ID)
	if err != nil || ci.NetworkSettings == nil || ci.NetworkSettings.Networks[name] == nil {
		t.Fatalf("server container: %v", err)
	}
	return name, gateway, net.JoinHostPort(ci.NetworkSettings.Networks[name].IPAddress, "8080")
}

func TestNetworkNoneAndOpen(t *testing.T) {
	netName, gw, server := testNetwork(t)
	// A server on the host, on the test network's gateway address: reachable from that
	// network, and the target a container without network must not reach.
	hostSrv := hostServer(t, netip.AddrPortFrom(gw, 0).String(), "host-server")
	serverHost, serverPort, _ := net.SplitHostPort(server)
	_, hostPort, _ := net.SplitHostPort(hostSrv)
	fetch := func(env backend.Environment, host, port string) string {
		return sh(t, env, fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s %s 2>&1; echo rc=$?`, host, port))
	}

	open := testConfig(t, t.TempDir(), docker.ModeExec)
	open.ReuseContainer = false
	open.Network = netName
	oenv := newEnv(t, open)
	waitFor(t, func() bool { return strings.Contains(fetch(oenv, serverHost, serverPort), "open-server") })
	if out := fetch(oenv, gw.String(), hostPort); !strings.Contains(out, "host-server") {
		t.Fatalf("open: the host server on the network's gateway: %q", out)
	}

	none := testConfig(t, t.TempDir(), docker.ModeExec)
	none.ReuseContainer = false
	none.Network = "none"
	nenv := newEnv(t, none)
	if out := fetch(nenv, gw.String(), hostPort); strings.Contains(out, "host-server") || strings.Contains(out, "rc=0") {
		t.Fatalf("none: the host server was reachable: %q", out)
	}
	if out := fetch(nenv, serverHost, serverPort); strings.Contains(out, "open-server") || strings.Contains(out, "rc=0") {
		t.Fatalf("none: the server container was reachable: %q", out)
	}
	if out := sh(t, nenv, "cat /proc/net/route | wc -l; ls /sys/class/net"); !strings.Contains(out, "lo") || strings.Contains(out, "eth0") {
		t.Fatalf("none: interfaces %q", out)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for i := 0; i < 50; i++ {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("condition not met in 5s")
}
