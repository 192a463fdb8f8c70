package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/airlock-dev/airlock/backend"
)

// EgressProxy starts Airlock's egress proxy listening on listen. The Docker backend asks for
// it on the host's loopback, which its containers cannot reach, and serves each call's
// commands through [backend.Egress.ServeCall] on a socket of the call's own instead.
type EgressProxy = backend.EgressProxy

// Egress is a running egress proxy.
type Egress = backend.Egress

// WithEgressProxy serves `[network] mode = "allowlist"`: the container runs with no network
// at all (Docker's network mode "none": its own loopback only) and the proxy is its only way
// out. For each command the backend makes a unix socket in a directory of the session's on
// the host, bind-mounted read-only at /.airlock-egress, and has the proxy answer on it as the
// command's call; the resident helper listens on 127.0.0.1 inside the container for that
// command, points its HTTP(S)_PROXY and ALL_PROXY at that port and relays each connection to
// the socket (see backend/helper's egress relay). So no host service is reachable from the
// container — not one listening on every address (0.0.0.0), not a gateway address, since the
// container has none — and each refusal lands on the call whose socket it came through.
//
// The helper is required: where it cannot run (environment.docker.helper = "off", a binary
// that does not fit the image, or one that stopped twice), allowlist is refused with the
// reason rather than run without its relay.
func WithEgressProxy(start EgressProxy) Option {
	return func(o *options) error {
		if start == nil {
			return errors.New("docker: nil egress proxy")
		}
		o.egress = start
		return nil
	}
}

// egressMount is where the session's socket directory appears in the container.
const egressMount = "/.airlock-egress"

// egressOwnerFile, in the socket directory, names the process that made it ("PID START"),
// for gc after a crash.
const egressOwnerFile = ".owner"

// maxSocketPath is the longest unix socket path the kernel takes (sun_path, with its NUL).
const maxSocketPath = 107

// labelNetwork marks the internal networks that allowlist sessions of earlier versions
// created; gc still removes those left behind.
const labelNetwork = "dev.airlock.network"

// setupEgress checks that allowlist can be delivered, makes the session's socket directory
// and starts the proxy.
func (e *Env) setupEgress(ctx context.Context, cfg Config, start EgressProxy) (Config, error) {
	const mode = `docker: [network] mode = "allowlist"`
	switch {
	case cfg.ReuseContainer:
		return cfg, errors.New(mode + ` cannot reuse a container (environment.docker.reuse_container = true): its egress sockets and proxy live as long as one session; set reuse_container = false`)
	case cfg.Network != "none":
		return cfg, fmt.Errorf(mode+` runs the container without a network, its only way out the egress proxy; environment.docker.network = %q conflicts with it (leave it "none")`, cfg.Network)
	case cfg.Helper == HelperOff:
		return cfg, errors.New(mode + ` needs the resident helper, which relays the container's only way out to the egress proxy, and environment.docker.helper = "off" turns it off: set helper = "auto", or choose [network] mode = "none" (no network) or "open" (the bridge)`)
	case e.helper.problem != "":
		return cfg, fmt.Errorf(mode+` needs the resident helper, which relays the container's only way out to the egress proxy, and it cannot run here: %s (fix environment.docker.helper_binary, or choose [network] mode = "none" or "open")`, e.helper.problem)
	}
	dir := filepath.Join(os.TempDir(), cfg.ContainerNamePrefix+"egress-"+e.session)
	if n := len(dir) + len("/0123456789abcdef.sock"); n > maxSocketPath {
		return cfg, fmt.Errorf("docker: the egress socket directory %s is too long for a unix socket path (%d > %d bytes): set TMPDIR to a shorter directory", dir, n, maxSocketPath)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return cfg, fmt.Errorf("docker: egress socket directory: %w", err)
	}
	e.egressDir = dir
	pid := os.Getpid()
	if err := os.WriteFile(filepath.Join(dir, egressOwnerFile), []byte(strconv.Itoa(pid)+" "+processStart(pid)+"\n"), 0o600); err != nil {
		return cfg, fmt.Errorf("docker: egress socket directory: %w", err)
	}
	// Commands run as another user: they may pass through the directory to a socket whose
	// name they were given, not list it.
	if err := os.Chmod(dir, 0o711); err != nil {
		return cfg, fmt.Errorf("docker: egress socket directory: %w", err)
	}
	eg, err := start(ctx, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
	if err != nil {
		return cfg, fmt.Errorf("docker: start the egress proxy: %w", err)
	}
	e.egressStop = eg.Stop
	if eg.ServeCall == nil {
		return cfg, errors.New("docker: the egress proxy cannot answer on the container's sockets (it has no ServeCall)")
	}
	e.egressServe = eg.ServeCall
	e.log.Debug("egress proxy ready", "sockets", dir)
	return cfg, nil
}

// egressSpec adds the socket directory to the container: read-only, which still lets a
// command connect(2) to a socket in it.
func (s *spec) addEgressMount(dir string) {
	s.Mounts = append(s.Mounts, specs.Mount{Destination: egressMount, Type: "bind", Source: dir,
		Options: []string{"rbind", "rprivate", "ro"}})
}

// checkEgressDir checks, before a container starts, that the socket directory is still the
// session's own: a directory, not a symlink, owned by this process's user.
func checkEgressDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("docker: egress socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("docker: refusing to start the container: the egress socket directory %s was replaced (%s)", dir, fi.Mode())
	}
	return nil
}

// callEgress makes the socket one command's traffic goes through, served by the proxy as the
// command's call, and returns its path in the container and what removes it. Without
// allowlist it returns "".
func (e *Env) callEgress(ctx context.Context) (string, func(), error) {
	if e.egressDir == "" {
		return "", func() {}, nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := hex.EncodeToString(b[:]) + ".sock"
	host := filepath.Join(e.egressDir, name)
	ln, err := net.Listen("unix", host)
	if err != nil {
		return "", nil, fmt.Errorf("docker: egress socket: %w", err)
	}
	// The container's user is the workspace owner or nobody: it needs write permission to
	// connect. The directory, which it cannot list, keeps the name to the command's helper.
	if err := os.Chmod(host, 0o666); err != nil {
		ln.Close()
		return "", nil, fmt.Errorf("docker: egress socket: %w", err)
	}
	release := e.egressServe(ln, backend.CallFrom(ctx))
	return path.Join(egressMount, name), func() {
		release() // closes the listener, which unlinks the socket
		_ = os.Remove(host)
	}, nil
}

// errNeedsHelper is why an allowlist environment does not run a command without its helper.
func (e *Env) errNeedsHelper(why string) error {
	return fmt.Errorf(`docker: [network] mode = "allowlist" needs the resident helper, which relays the container's only way out to the egress proxy, and it is not running (%s); commands are refused rather than run without it: start a new session, or choose [network] mode = "none" or "open"`, why)
}

// teardownEgress stops the proxy and removes the socket directory.
func (e *Env) teardownEgress(context.Context) error {
	var errs []error
	if e.egressStop != nil {
		if err := e.egressStop(); err != nil {
			errs = append(errs, fmt.Errorf("docker: stop egress proxy: %w", err))
		}
		e.egressStop = nil
	}
	if e.egressDir != "" {
		if err := os.RemoveAll(e.egressDir); err != nil {
			errs = append(errs, fmt.Errorf("docker: remove egress socket directory: %w", err))
		}
		e.egressDir = ""
	}
	return errors.Join(errs...)
}

// egressDirName is a socket directory's name: the container name prefix, "egress-" and the
// session.
var egressDirName = regexp.MustCompile(`egress-[0-9a-f]{12}$`)

// gcEgressDirs removes socket directories whose session ended without Close (its process is
// gone) or, with All, every one of this user's; NamePrefix applies to the directory's name.
func gcEgressDirs(opts GCOptions) []GCItem {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), opts.NamePrefix+"*egress-*"))
	var items []GCItem
	for _, dir := range matches {
		if !egressDirName.MatchString(filepath.Base(dir)) {
			continue
		}
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, egressOwnerFile))
		if err != nil {
			continue // not one of ours
		}
		pidStr, start, _ := strings.Cut(strings.TrimSpace(string(raw)), " ")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		reason := ""
		switch {
		case opts.All:
			reason = "--all"
		case !processAlive(pid, start):
			reason = "its session ended (process " + pidStr + " is gone)"
		}
		if reason == "" || opts.Now.Sub(fi.ModTime()) < opts.MinAge && !opts.All {
			continue
		}
		it := GCItem{Name: dir, Reason: "egress socket directory: " + reason}
		if !opts.DryRun {
			it.Err = os.RemoveAll(dir)
			it.Removed = it.Err == nil
		}
		items = append(items, it)
	}
	return items
}

func removeNetwork(ctx context.Context, cli *client.Client, id string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, apiTimeout)
		err = cli.NetworkRemove(rctx, id)
		cancel()
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		// The daemon may still be detaching a container that was just removed.
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: remove network %s: %w", shortID(id), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("docker: remove network %s: %w", shortID(id), err)
}

// gcNetworks removes the internal networks that earlier versions made for allowlist
// sessions, once their session ended (its process is gone) or, with All, every one;
// networks still holding a container are left for the next run.
func gcNetworks(ctx context.Context, cli *client.Client, opts GCOptions, hostname string) []GCItem {
	lctx, cancel := context.WithTimeout(ctx, apiTimeout)
	list, err := cli.NetworkList(lctx, network.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", labelOwner+"="+ownerValue), filters.Arg("label", labelNetwork))})
	cancel()
	if err != nil {
		return []GCItem{{Name: "networks", Err: fmt.Errorf("docker: list networks: %w", err)}}
	}
	var items []GCItem
	for _, n := range list {
		if len(opts.NamePrefix) > 0 && (len(n.Name) < len(opts.NamePrefix) || n.Name[:len(opts.NamePrefix)] != opts.NamePrefix) {
			continue
		}
		reason := ""
		switch l := n.Labels; {
		case opts.All:
			reason = "--all"
		case l[labelHostname] == hostname:
			if pid, err := strconv.Atoi(l[labelPID]); err == nil && !processAlive(pid, l[labelPIDStart]) {
				reason = "its session ended (process " + l[labelPID] + " is gone)"
			}
		}
		if reason == "" || opts.Now.Sub(n.Created) < opts.MinAge && !opts.All {
			continue
		}
		it := GCItem{ID: n.ID, Name: n.Name, Reason: "network: " + reason}
		if !opts.DryRun {
			it.Err = removeNetwork(ctx, cli, n.ID)
			it.Removed = it.Err == nil
		}
		items = append(items, it)
	}
	return items
}
