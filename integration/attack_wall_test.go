package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// The second wall: what Landlock does not see, attacked through Airlock with approvals in
// auto mode, so that only the kernel (seccomp, capabilities, the process's session and
// descriptors) can hold. Every payload is a harmless marker; every attack aimed at Airlock
// aims at the airlock process under test.

// py runs a python3 program given on one line with arguments; the program is quoted for sh.
func py(prog string, args ...string) string {
	return "python3 -c '" + prog + "' " + strings.Join(args, " ")
}

// tcpListener counts connections accepted on a fresh loopback port.
func tcpListener(t *testing.T) (port int, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// networkAttacks are the ways to the network that do not call connect() or bind(): TCP Fast
// Open, listen() without bind(), vsock and the netlink families that show the host. Each
// prints a marker word only when the kernel let it through.
func networkAttacks(port int) []string {
	addr := fmt.Sprintf(`("127.0.0.1", %d)`, port)
	return []string{
		py(`import socket; s=socket.socket(); s.sendto(b"x", socket.MSG_FASTOPEN, ` + addr + `); print("reached-tfo")`),
		py(`import socket; s=socket.socket(); s.sendmsg([b"x"], [], socket.MSG_FASTOPEN, ` + addr + `); print("reached-tfo")`),
		py(`import socket; s=socket.socket(); s.setsockopt(socket.IPPROTO_TCP, 30, 1); print("reached-tfo-connect-option")`),
		py(`import socket; s=socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print("reached-vsock")`),
		py(`import socket; s=socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4); print("reached-sock-diag")`),
		py(`import socket; s=socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15); print("reached-uevent")`),
		py(`import socket; s=socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132); print("reached-sctp")`),
	}
}

// checkNoReach fails for every result whose output holds a "reached-" marker.
func checkNoReach(t *testing.T, cmds []string, rs []result) {
	t.Helper()
	for i, r := range rs {
		if strings.Contains(r.Content, "reached-") {
			t.Errorf("%s went through: %q\n%s", r.CallID, r.Content, cmds[i])
		}
	}
}

// TestAttackNetworkWithoutConnect: with the kernel sandbox on, commands share the host's
// network: in [network] mode none Landlock allows no TCP connect or bind, in allowlist a
// connect only to the egress proxy's port. Fast Open, listen() without bind(), vsock and the
// netlink families that list the host's sockets must not open another way. The netlink
// family programs need (routes and addresses, for getaddrinfo and getifaddrs) still works.
func TestAttackNetworkWithoutConnect(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	for _, mode := range []string{"none", "allowlist"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			attackNetwork(t, mode)
		})
	}
}

func attackNetwork(t *testing.T, mode string) {
	b := newLocalBed(t, "landlock")
	cfg, err := os.ReadFile(filepath.Join(b.ws, "airlock.toml"))
	if err != nil {
		t.Fatal(err)
	}
	section := "[network]\nmode = \"none\"\n"
	if mode == "allowlist" {
		section = "[network]\nmode = \"allowlist\"\nallow_domains = [\"example.invalid\"]\n"
	}
	writeConfig(t, b.ws, string(cfg)+section)
	port, accepted := tcpListener(t)

	// listen() without bind() binds a free port on every address: the command writes the
	// port where the test finds it, and the test dials it while the command waits.
	portFile := filepath.Join(b.ws, "work", "listen-port")
	listen := py(`import socket; s=socket.socket(); s.listen(); open("work/listen-port.tmp","w").write(str(s.getsockname()[1])); __import__("os").rename("work/listen-port.tmp","work/listen-port"); s.settimeout(8); c,_=s.accept(); print("reached-listener", c.recv(64))`)
	dialed := make(chan string, 1)
	stop := make(chan struct{})
	go func() {
		defer close(dialed)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			p, err := os.ReadFile(portFile)
			if err != nil {
				continue
			}
			c, err := net.DialTimeout("tcp4", "127.0.0.1:"+string(p), 2*time.Second)
			if err != nil {
				dialed <- err.Error()
				return
			}
			c.Write([]byte("from-the-host"))
			c.Close()
			dialed <- "connected"
			return
		}
	}()
	cmds := append(networkAttacks(port), listen,
		py(`import socket; s=socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print("route-ok")`),
		"ip -o link show lo")
	rs := b.calls(cmds...)
	close(stop)
	checkNoReach(t, cmds, rs)
	if d := <-dialed; d == "connected" {
		t.Errorf("the host reached a listener a command opened with listen() and no bind()")
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections reached a loopback port other than the proxy's", n)
	}
	n := len(cmds)
	if !strings.Contains(rs[n-2].Content, "route-ok") || !strings.Contains(rs[n-1].Content, "lo") {
		t.Errorf("NETLINK_ROUTE, which getaddrinfo and getifaddrs use, was refused: %+v %+v", rs[n-2], rs[n-1])
	}
	b.checkOutside()
}

// signalAttacks aim at airlock (the command's $PPID) and each of its threads by every route
// that is not kill(2): a pidfd made by opening /proc/TID, a SIGIO owner (fcntl F_SETOWN and
// F_SETOWN_EX, ioctl FIOSETOWN), and a CPU limit set on it with prlimit. The pidfd attack
// sends SIGKILL once signal 0 got through, and the F_SETOWN one makes SIGKILL the SIGIO
// signal and sends it to each thread in turn: where either gets through, airlock dies and
// the batch fails.
func signalAttacks() []string {
	tids := `import os,sys; p=sys.argv[1]; tids=os.listdir("/proc/%s/task" % p)`
	return []string{
		py(tids+`
import signal
for t in tids:
    try:
        fd=os.open("/proc/"+t, os.O_RDONLY|os.O_DIRECTORY); signal.pidfd_send_signal(fd, 0); print("reached-pidfd", t); signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError as e: print(t, e)`, "$PPID"),
		py(tids+`
import fcntl,socket
a,b=socket.socketpair()
fcntl.fcntl(a, fcntl.F_SETFL, fcntl.fcntl(a, fcntl.F_GETFL) | os.O_ASYNC); fcntl.fcntl(a, 10, 9)
for t in tids:
    try: fcntl.fcntl(a, fcntl.F_SETOWN, int(t)); b.send(b"x"); a.recv(1); print("owner", t)
    except OSError as e: print(t, e)`, "$PPID"),
		py(tids+`
import fcntl,socket,struct
a,b=socket.socketpair()
for t in tids:
    try: fcntl.fcntl(a, 15, struct.pack("ii", 0, int(t))); print("reached-setown-ex", t)
    except OSError as e: print(t, e)
    try: fcntl.ioctl(a, 0x8901, struct.pack("i", int(t))); print("reached-fiosetown", t)
    except OSError as e: print(t, e)`, "$PPID"),
		py(`import resource,sys; resource.prlimit(int(sys.argv[1]), resource.RLIMIT_CORE, (0, 0)); print("reached-prlimit")`, "$PPID"),
	}
}

// TestAttackSignalsAndSharedState: the command cannot signal airlock or its threads by any
// route, cannot write a SysV shared memory segment of a host process, and airlock survives
// to run the next call.
func TestAttackSignalsAndSharedState(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	b := newLocalBed(t, "landlock")
	// A host process's segment, owned by this (root) user as airlock is.
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.SysvShmDetach(mem)
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	})
	copy(mem, "victim")
	shm := py(`import ctypes,sys; libc=ctypes.CDLL(None, use_errno=True); libc.shmat.restype=ctypes.c_void_p; a=libc.shmat(int(sys.argv[1]), None, 0)
if a in (None, ctypes.c_void_p(-1).value): print("shmat", ctypes.get_errno()); sys.exit(1)
ctypes.memmove(a, b"pwned!", 6); print("reached-shm")`, fmt.Sprint(id))
	cmds := append(signalAttacks(), shm,
		py(`import ctypes; libc=ctypes.CDLL(None); print("reached-shmget" if libc.shmget(0x41524c4b, 4096, 0o1600) >= 0 else "shmget refused")`),
		"echo still-alive")
	rs := b.calls(cmds...)
	if last := rs[len(rs)-1]; !strings.Contains(last.Content, "still-alive") {
		t.Fatalf("airlock did not survive the batch: %+v", last)
	}
	checkNoReach(t, cmds, rs)
	if string(mem[:6]) != "victim" {
		t.Errorf("a command wrote a host process's shared memory: %q", mem[:6])
	}
}

// TestAttackTerminalAndDescriptors: airlock runs on a terminal (its controlling tty, also
// inherited as descriptor 3) and holds descriptor 4, a file outside every root, without
// close-on-exec. A command must neither push input into the terminal (TIOCSTI), nor open
// it, nor find either descriptor.
func TestAttackTerminalAndDescriptors(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	b := newLocalBed(t, "landlock")
	master, slave := openPTY(t)
	secret := filepath.Join(b.outHost, "held-open")
	mustWrite(t, secret, b.marker+"-inherited\n")
	held, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	inject := `import fcntl,termios,os,sys
fd=int(sys.argv[1]) if len(sys.argv)>1 else os.open("/dev/tty", os.O_RDWR)
for c in b"echo typed-by-the-agent\n": fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
print("reached-tiocsti")`
	cmds := []string{
		py(inject), py(inject, "3"), py(inject, "0"),
		"cat <&4; cat <&3 & sleep 0.2; kill $! 2>/dev/null; for f in /proc/$$/fd/*; do readlink $f; done | grep -e pts -e held-open && echo reached-fd; true",
		"tty && echo reached-tty; [ -e /proc/self/fd/3 ] && echo reached-fd3; true",
		`read -r _ _ _ _ _ sid _ < /proc/$$/stat; [ "$sid" = "$$" ] && echo own-session || echo reached-sid`,
	}
	var arr []map[string]any
	for i, c := range cmds {
		arr = append(arr, map[string]any{"name": "terminal", "call_id": fmt.Sprintf("t%d", i), "arguments": map[string]any{"command": c}})
	}
	in, _ := json.Marshal(arr)
	cmd := exec.Command(airlockBin, "call")
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), b.env...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.ExtraFiles = []*os.File{slave, held}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	if err := cmd.Run(); err != nil {
		t.Fatalf("airlock call: %v\n%s", err, errb.String())
	}
	var rs []result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil || len(rs) != len(cmds) {
		t.Fatalf("decode: %v\n%s", err, out.String())
	}
	checkNoReach(t, cmds, rs)
	if strings.Contains(out.String()+errb.String(), b.marker) {
		t.Errorf("a descriptor airlock inherited reached a command:\n%s", out.String())
	}
	if got := pendingInput(t, slave); got != "" {
		t.Errorf("a command pushed %q into the terminal's input", got)
	}
	_ = master
}

// openPTY makes a terminal pair; the slave is in raw mode so that pushed input is readable
// byte by byte.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 0, 0
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// pendingInput reads what waits in the terminal's input queue.
func pendingInput(t *testing.T, slave *os.File) string {
	t.Helper()
	n, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
	if err != nil || n == 0 {
		return ""
	}
	buf := make([]byte, n)
	k, _ := syscall.Read(int(slave.Fd()), buf)
	return string(buf[:max(k, 0)])
}

// TestAttackMetadataOutside: a file outside every root that belongs to another user keeps
// its mode, owner, times, extended attributes and file capabilities, because commands hold
// no capabilities even when airlock runs as root. chmod inside the roots still works.
func TestAttackMetadataOutside(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the attack is a root command's capabilities")
	}
	b := newLocalBed(t, "landlock")
	victim := filepath.Join(b.outHost, "theirs")
	mustWrite(t, victim, victimContent)
	if err := os.Chown(victim, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(victim, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	v := victim
	cmds := []string{
		"chmod 4777 " + v + " && echo reached-chmod",
		"chown 0:0 " + v + " && echo reached-chown",
		"touch -d 2001-01-01 " + v + " && echo reached-utime; touch " + v + " && echo reached-utime-now",
		py(`import os,sys; os.setxattr(sys.argv[1], "user.agent", b"x"); print("reached-xattr")`, v),
		py(`import os,sys; os.setxattr(sys.argv[1], "trusted.agent", b"x"); print("reached-trusted-xattr")`, v),
		"setcap cap_net_raw+ep " + v + " && echo reached-setcap",
		"echo '#!/bin/sh' > work/tool && chmod +x work/tool && ./work/tool && echo inside-ok",
	}
	rs := b.calls(cmds...)
	checkNoReach(t, cmds, rs)
	if !strings.Contains(rs[len(rs)-1].Content, "inside-ok") {
		t.Errorf("chmod inside the write roots failed: %+v", rs[len(rs)-1])
	}
	var st unix.Stat_t
	if err := unix.Stat(victim, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o644 || st.Uid != 65534 || st.Mtim.Sec != mtime.Unix() {
		t.Errorf("the file outside changed: mode %o uid %d mtime %d", st.Mode&0o7777, st.Uid, st.Mtim.Sec)
	}
	if sz, _ := unix.Listxattr(victim, make([]byte, 256)); sz > 0 {
		t.Errorf("the file outside got extended attributes")
	}
}

// credentialStores are the places under a home directory where toolchains and clients keep
// credentials, one file each as a real tool would write it; the test adds every entry of
// sandbox.CredentialDirs none of these lies in.
var credentialStores = []string{
	".cargo/credentials.toml", ".cargo/credentials",
	".cache/huggingface/token", ".huggingface/token",
	".config/git/credentials", ".git-credentials",
	".m2/settings.xml", ".m2/settings-security.xml", ".gradle/gradle.properties",
	".npmrc", ".yarnrc.yml", ".pypirc", ".netrc", ".docker/config.json", ".kube/config",
	".aws/credentials", ".config/gcloud/credentials.db", ".azure/accessTokens.json",
	".ssh/id_ed25519", ".gnupg/private-keys-v1.d/key.key", ".config/gh/hosts.yml",
	".config/pypoetry/auth.toml", ".gem/credentials", ".config/composer/auth.json",
	".terraform.d/credentials.tfrc.json", ".pgpass", ".vault-token", ".config/rclone/rclone.conf",
}

// TestAttackCredentialStores: with HOME pointing at a home that holds every credential
// store (and the toolchain directories around them, which commands may read), no command
// reads any of them; the toolchain files beside them stay readable.
func TestAttackCredentialStores(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	b := newLocalBed(t, "landlock")
	// Every entry of the sandbox's list is in the table: itself (as a file) where no file
	// above lies beneath it.
	stores := append([]string(nil), credentialStores...)
	for _, c := range sandbox.CredentialDirs {
		if !slices.ContainsFunc(stores, func(s string) bool { return s == c || strings.HasPrefix(s, c+"/") }) {
			stores = append(stores, c)
		}
	}
	for _, p := range stores {
		f := filepath.Join(b.home, p)
		mustMkdir(t, filepath.Dir(f))
		mustWrite(t, f, b.marker+"-"+p+"\n")
	}
	mustWrite(t, filepath.Join(b.home, ".cargo", "config.toml"), "[build]\n")
	var cmds []string
	for _, p := range stores {
		cmds = append(cmds, "cat "+filepath.Join(b.home, p))
	}
	cmds = append(cmds, "cat "+filepath.Join(b.home, ".cargo", "config.toml"))
	rs := b.calls(cmds...) // fails the test when a marker reaches any output
	for i, p := range stores {
		t.Run(p, func(t *testing.T) {
			if r := rs[i]; r.Metadata.ExitCode == nil || *r.Metadata.ExitCode == 0 {
				t.Errorf("read %s: %+v", p, r)
			}
		})
	}
	if r := rs[len(rs)-1]; !strings.Contains(r.Content, "[build]") {
		t.Errorf("a toolchain file beside the credentials is not readable: %+v", r)
	}
}

// TestAttackSSHWriteRootsAndNetwork: the remote helper's sandbox takes its write roots from
// the policy: with write_roots = ["work"], the rest of the remote workspace is read-only.
// Its network, none here, is held against Fast Open and listen() as on the local backend,
// and the helper (the commands' $PPID there) survives the signal attacks.
func TestAttackSSHWriteRootsAndNetwork(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	b, _ := newSSHBed(t, "auto", "landlock")
	cfg, err := os.ReadFile(filepath.Join(b.dir, "airlock.toml"))
	if err != nil {
		t.Fatal(err)
	}
	setup := b.calls("mkdir -p " + b.ws + "/work && echo keep > " + b.ws + "/top.txt")
	if setup[0].Metadata.ExitCode == nil || *setup[0].Metadata.ExitCode != 0 {
		t.Fatalf("set-up: %+v", setup[0])
	}
	writeConfig(t, b.dir, string(cfg)+"[policy]\nwrite_roots = [\"work\"]\n")
	port, accepted := tcpListener(t)
	cmds := append([]string{
		"echo pwned > " + b.ws + "/top.txt; echo pwned > " + b.ws + "/new.txt; mkdir " + b.ws + "/newdir; ls " + b.ws,
		"echo fine > " + b.ws + "/work/ok && cat " + b.ws + "/work/ok",
		"cat " + b.ws + "/top.txt",
	}, networkAttacks(port)...)
	cmds = append(append(cmds, signalAttacks()...), "echo still-alive")
	rs := b.calls(cmds...)
	if last := rs[len(rs)-1]; !strings.Contains(last.Content, "still-alive") {
		t.Fatalf("the helper did not survive the batch: %+v", last)
	}
	if !strings.Contains(rs[1].Content, "fine") {
		t.Errorf("a write inside the write root failed: %+v", rs[1])
	}
	if !strings.Contains(rs[2].Content, "keep") {
		t.Errorf("the read root is not readable, or a write outside the write root went through: %+v", rs[2])
	}
	for _, name := range []string{"new.txt", "newdir"} {
		if _, err := os.Lstat(filepath.Join(b.ws, name)); err == nil {
			t.Errorf("a command made %s in the workspace outside write_roots: %q", name, rs[0].Content)
		}
	}
	checkNoReach(t, cmds[3:], rs[3:])
	if n := accepted.Load(); n != 0 {
		t.Errorf("%d connections reached a loopback port with the network none", n)
	}
}
