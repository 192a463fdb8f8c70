// Package sshtest starts real OpenSSH servers for tests of the ssh backend: each [Server] is
// an sshd of its own (own config, host key, port and authorized key) that logs in an
// unprivileged machine account of its own, created for it and removed when its test ends,
// whose home has an empty profile. Test packages run concurrently (`go test ./...`), and the
// backend keeps state in the remote home (~/.cache/airlock): one account per server means
// no two servers, in one process or in two, ever share a home. A server can live in a
// network namespace the test creates ([NewNetns]), so that the backend is exercised across
// a real network stack and the link can be cut.
//
// Starting sshd needs root and /usr/sbin/sshd. Without them the test is skipped, unless
// AIRLOCK_REQUIRE_SSH=1 (which CI sets) turns the skip into a failure.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/airlock-dev/airlock/backend"
	sshbackend "github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

// sshdPath is where Debian's openssh-server puts sshd; sshd must be started by absolute path.
const sshdPath = "/usr/sbin/sshd"

// Require skips the test when sshd cannot be run here (not root, or no sshd), or fails it
// when AIRLOCK_REQUIRE_SSH=1.
func Require(t testing.TB) {
	t.Helper()
	var why string
	switch {
	case os.Geteuid() != 0:
		why = "not root"
	default:
		if _, err := os.Stat(sshdPath); err != nil {
			why = sshdPath + " missing (apt-get install openssh-server)"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("AIRLOCK_REQUIRE_SSH") == "1" {
		t.Fatalf("sshd tests required (AIRLOCK_REQUIRE_SSH=1) but cannot run: %s", why)
	}
	t.Skipf("sshd tests skipped: %s", why)
}

// Server is one running sshd.
type Server struct {
	// Host and Port are where it listens.
	Host string
	Port int
	// Config is a ready backend configuration: user, key, a known_hosts holding the host
	// key, and a fresh workdir in the user's home. Mode is "session".
	Config sshbackend.Config
	// HostKey is the server's public host key.
	HostKey gossh.PublicKey
	// User is the server's own machine account; UID and GID are its ids.
	User     string
	UID, GID int
	// Home is the account's home directory.
	Home string
	// Dir holds the server's files (config, keys, log).
	Dir string

	netns      string
	configPath string
	logPath    string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Option adjusts a server.
type Option func(*options)

type options struct {
	netns *Netns
	extra []string
}

// InNetns runs the server inside ns, listening on its peer address.
func InNetns(ns *Netns) Option { return func(o *options) { o.netns = ns } }

// WithSSHDConfig adds lines to the server's sshd_config.
func WithSSHDConfig(lines ...string) Option {
	return func(o *options) { o.extra = append(o.extra, lines...) }
}

const noisyBashrc = `[ -n "$AIRLOCK_TEST_NOISE" ] && { echo "noise from .bashrc"; printf 'no newline'; echo "noise on stderr" >&2; }
`

// WithNoisyDotfiles makes the test user's .bashrc print to stdout and stderr before every
// command on this server, as a chatty profile would.
func WithNoisyDotfiles() Option {
	return func(o *options) { o.extra = append(o.extra, "SetEnv AIRLOCK_TEST_NOISE=1") }
}

// Start runs a new sshd for the test and stops it (and every connection it forked) when the
// test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	Require(t)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	acct := newAccount(t)
	home := acct.home

	dir := t.TempDir()
	// sshd reads authorized_keys as the user, so the directory must be traversable.
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chmod(filepath.Dir(dir), 0o755))
	hostSigner := writeKey(t, filepath.Join(dir, "host_ed25519"))
	clientKey := filepath.Join(dir, "client_ed25519")
	clientSigner := writeKey(t, clientKey)
	must(t, os.WriteFile(filepath.Join(dir, "authorized_keys"), gossh.MarshalAuthorizedKey(clientSigner.PublicKey()), 0o644))

	s := &Server{
		Host:    "127.0.0.1",
		HostKey: hostSigner.PublicKey(),
		User:    acct.name,
		UID:     acct.uid,
		GID:     acct.gid,
		Home:    home,
		Dir:     dir,
		logPath: filepath.Join(dir, "sshd.log"),
	}
	if o.netns != nil {
		s.Host, s.netns = o.netns.PeerIP, o.netns.Name
	}

	ws := filepath.Join(home, "ws-"+randHex(6))
	must(t, os.MkdirAll(ws, 0o755))
	must(t, os.Chown(ws, acct.uid, acct.gid))

	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s.Port = freePort(t, o.netns != nil)
		s.configPath = filepath.Join(dir, "sshd_config")
		must(t, os.WriteFile(s.configPath, []byte(s.sshdConfig(o.extra)), 0o600))
		if lastErr = s.start(); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("sshtest: start sshd: %v\nlog:\n%s", lastErr, s.Log())
	}
	t.Cleanup(s.Stop)

	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	knownHosts := filepath.Join(dir, "known_hosts")
	must(t, os.WriteFile(knownHosts, []byte(knownhosts.Line([]string{addr}, s.HostKey)+"\n"), 0o600))
	s.Config = sshbackend.Config{
		Host:              s.Host,
		Port:              s.Port,
		User:              acct.name,
		KeyPath:           clientKey,
		KnownHosts:        knownHosts,
		ConnectTimeout:    backend.Duration(5 * time.Second),
		KeepaliveInterval: backend.Duration(15 * time.Second),
		Workdir:           ws,
		Mode:              sshbackend.ModeSession,
	}
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func (s *Server) sshdConfig(extra []string) string {
	lines := []string{
		"Port " + strconv.Itoa(s.Port),
		"ListenAddress " + s.Host,
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"PidFile " + filepath.Join(s.Dir, "sshd.pid"),
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin no",
		"StrictModes no",
		"AllowUsers " + s.User,
		"AllowTcpForwarding yes",
		"LogLevel VERBOSE",
		"PrintMotd no",
	}
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

// start runs sshd and waits until it accepts connections.
func (s *Server) start() error {
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return err
	}
	argv := []string{sshdPath, "-D", "-f", s.configPath, "-E", s.logPath}
	if s.netns != "" {
		argv = append([]string{"ip", "netns", "exec", s.netns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	addr := s.Addr()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("sshd exited at start: %s", cmd.ProcessState)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill()
	return fmt.Errorf("sshd not listening on %s after 10s", addr)
}

// stopGrace is how long Stop waits for sessions whose client has gone to end on their own.
const stopGrace = 3 * time.Second

// Stop kills sshd and every process it forked: connections and the commands on them. It
// first gives the connections a test's environments have closed [stopGrace] to end: a
// resident helper whose client has gone is still removing its temporary directory, and a
// SIGKILL then would leave that directory behind.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil {
		deadline := time.Now().Add(stopGrace)
		for len(descendants(cmd.Process.Pid)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.kill()
}

// KillConnections drops every open connection (and what runs on it) the way a crashed or
// restarted sshd would, leaving the listener up.
func (s *Server) KillConnections() {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	killTree(descendants(cmd.Process.Pid))
}

// killTree kills the sshd processes among pids first, then the rest, so that no sshd is left
// to report a command's death to the client: the connection just vanishes.
func killTree(pids []int) {
	var rest []int
	for _, pid := range pids {
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) == "sshd" {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		} else {
			rest = append(rest, pid)
		}
	}
	for _, pid := range rest {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Restart kills sshd and all its connections, then starts it again on the same port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.kill()
	if err := s.start(); err != nil {
		t.Fatalf("sshtest: restart sshd: %v\nlog:\n%s", err, s.Log())
	}
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	kids := descendants(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	killTree(kids)
	<-done
}

// Log returns sshd's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// descendants lists every process below pid, read from /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: fields start after the last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// writeKey generates an ed25519 key, writes it in OpenSSH format (0600) and returns its
// signer.
func writeKey(t testing.TB, path string) gossh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	block, err := gossh.MarshalPrivateKey(priv, "")
	must(t, err)
	must(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	s, err := gossh.NewSignerFromKey(priv)
	must(t, err)
	return s
}

// NewKeyFile writes a fresh ed25519 private key to a temp file and returns its path and
// signer; the key is authorized nowhere.
func NewKeyFile(t testing.TB) (string, gossh.Signer) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "id_ed25519")
	return p, writeKey(t, p)
}

// freePort picks a TCP port. On loopback it asks the kernel; in a fresh namespace nothing
// listens, so any port above the well-known range will do.
func freePort(t testing.TB, inNetns bool) int {
	t.Helper()
	if inNetns {
		var b [2]byte
		_, _ = rand.Read(b[:])
		return 20000 + int(b[0])<<8%20000 + int(b[1])
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
}

// Netns is a network namespace joined to the host by a veth pair: HostIP on the host side,
// PeerIP inside, a /30 of 10.213.0.0/16.
type Netns struct {
	Name   string
	HostIP string
	PeerIP string
	hostIf string
}

var netnsSeq struct {
	sync.Mutex
	n int
}

// NewNetns creates a namespace for the test and deletes it when the test ends.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	Require(t)
	if _, err := exec.LookPath("ip"); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_SSH") == "1" {
			t.Fatalf("sshtest: ip (iproute2) missing")
		}
		t.Skip("sshtest: ip (iproute2) missing")
	}
	netnsSeq.Lock()
	netnsSeq.n++
	seq := netnsSeq.n
	netnsSeq.Unlock()
	pid := os.Getpid()
	n := &Netns{
		Name:   fmt.Sprintf("airlock-ssh-%d-%d", pid, seq),
		hostIf: fmt.Sprintf("alh%d%d", pid%100000, seq%100),
	}
	peerIf := fmt.Sprintf("alp%d%d", pid%100000, seq%100)
	// Pick a /30 no interface on the host uses yet.
	for i := 0; i < 256; i++ {
		octet := (pid + seq*7 + i) % 250
		out, _ := exec.Command("ip", "-4", "-o", "addr", "show", "to", fmt.Sprintf("10.213.%d.0/30", octet)).Output()
		if len(strings.TrimSpace(string(out))) == 0 {
			n.HostIP, n.PeerIP = fmt.Sprintf("10.213.%d.1", octet), fmt.Sprintf("10.213.%d.2", octet)
			break
		}
	}
	if n.HostIP == "" {
		t.Fatal("sshtest: no free 10.213.x.0/30")
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", n.Name).Run()
		_ = exec.Command("ip", "link", "del", n.hostIf).Run()
	})
	for _, argv := range [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.hostIf, "type", "veth", "peer", "name", peerIf},
		{"link", "set", peerIf, "netns", n.Name},
		{"addr", "add", n.HostIP + "/30", "dev", n.hostIf},
		{"link", "set", n.hostIf, "up"},
		{"-n", n.Name, "addr", "add", n.PeerIP + "/30", "dev", peerIf},
		{"-n", n.Name, "link", "set", peerIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", argv...).CombinedOutput(); err != nil {
			t.Fatalf("sshtest: ip %s: %v: %s", strings.Join(argv, " "), err, out)
		}
	}
	return n
}

// SetLink brings the host side of the veth pair down (a cut cable: packets vanish, no reset
// is sent) or back up.
func (n *Netns) SetLink(t testing.TB, up bool) {
	t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	if out, err := exec.Command("ip", "link", "set", n.hostIf, state).CombinedOutput(); err != nil {
		t.Fatalf("sshtest: ip link set %s %s: %v: %s", n.hostIf, state, err, out)
	}
}

// airlockBuild is the static linux airlock that tests put on the remote host.
var airlockBuild = buildtest.Program{
	Pkg:     "github.com/airlock-dev/airlock/cmd/airlock",
	Prefix:  "airlock-sshtest-bin-",
	Env:     []string{"CGO_ENABLED=0", "GOOS=linux"},
	Timeout: 5 * time.Minute,
}

// AirlockBinary builds a static linux airlock (with the helper subcommand) once per test
// process and returns its path. A failed build skips the test, unless AIRLOCK_REQUIRE_SSH=1.
// A test package that calls it calls buildtest.Cleanup from its TestMain.
func AirlockBinary(t testing.TB) string {
	t.Helper()
	bin, err := airlockBuild.Build()
	if err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_SSH") == "1" {
			t.Fatalf("sshtest: %v", err)
		}
		t.Skipf("sshtest: %v", err)
	}
	return bin
}
