//go:build linux

package sandbox_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// errnoProbe is a python3 program that runs stmt and prints "ok", or the errno it failed
// with: the filter's refusals are EPERM (1) or ENOSYS (38), which the kernel would not give
// for these calls otherwise.
func errnoProbe(stmt string) string {
	return "import socket,fcntl,os,resource,signal,struct,ctypes,termios\ntry:\n    " +
		strings.ReplaceAll(stmt, "\n", "\n    ") + "\n    print(\"ok\")\nexcept OSError as e:\n    print(e.errno)\n"
}

// runProbe runs the program under sb with fd 3 a terminal, and returns what it printed.
func runProbe(t *testing.T, sb *sandbox.Sandbox, dir, prog string, tty *os.File) string {
	t.Helper()
	var out bytes.Buffer
	err := sb.Do(func() error {
		cmd := exec.Command(python3(t), "-c", prog)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.ExtraFiles = []*os.File{tty}
		return cmd.Run()
	})
	if err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// ptySlave opens a terminal for the probes' ioctls.
func ptySlave(t *testing.T) *os.File {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
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
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSecondWall is the filter's table: each call under each network policy, and the errno
// it must give ("ok" for allowed).
func TestSecondWall(t *testing.T) {
	sandbox.RequireLandlock(t)
	tty := ptySlave(t)
	ppid := os.Getpid()
	none := sandbox.Network{}
	proxy := sandbox.Network{ConnectTCP: []uint16{1}}
	open := sandbox.Network{Unrestricted: true}
	const eperm, enosys, ok = "1", "38", "ok"
	tests := []struct {
		name  string
		stmt  string
		net   sandbox.Network
		ipc   bool
		errno string
	}{
		{"TIOCSTI", `fcntl.ioctl(3, termios.TIOCSTI, b"x")`, none, false, eperm},
		{"TIOCLINUX", `fcntl.ioctl(3, 0x541C, b"\x00"*8)`, none, false, eperm},
		{"TIOCCONS", `fcntl.ioctl(3, 0x541D)`, none, false, eperm},
		{"terminal size still readable", `fcntl.ioctl(3, termios.TIOCGWINSZ, b"\x00"*8)`, none, false, ok},
		{"FIOSETOWN", `a,b=socket.socketpair(); fcntl.ioctl(a, 0x8901, struct.pack("i", 1))`, none, false, eperm},
		{"F_SETOWN_EX", `a,b=socket.socketpair(); fcntl.fcntl(a, 15, struct.pack("ii", 0, 1))`, none, false, eperm},
		{"F_SETOWN at the starting process", fmt.Sprintf(`a,b=socket.socketpair(); fcntl.fcntl(a, fcntl.F_SETOWN, %d)`, ppid), none, false, eperm},
		{"F_SETOWN at itself", `a,b=socket.socketpair(); fcntl.fcntl(a, fcntl.F_SETOWN, os.getpid())`, none, false, ok},
		{"pidfd_send_signal", `signal.pidfd_send_signal(os.pidfd_open(os.getpid()), 0)`, none, false, enosys},
		{"prlimit of another process", fmt.Sprintf(`resource.prlimit(%d, resource.RLIMIT_CORE, (0, 0))`, ppid), none, false, eperm},
		{"prlimit read of another process", fmt.Sprintf(`resource.prlimit(%d, resource.RLIMIT_CORE)`, ppid), none, false, ok},
		{"setrlimit of itself", `resource.setrlimit(resource.RLIMIT_CORE, (0, 0))`, none, false, ok},
		{"shmget", `libc=ctypes.CDLL(None, use_errno=True)
if libc.shmget(0, 4096, 0o1600) < 0: raise OSError(ctypes.get_errno(), "shmget")`, none, false, eperm},
		{"shmget left alone with PrivateIPC", `libc=ctypes.CDLL(None, use_errno=True)
i=libc.shmget(0, 4096, 0o1600)
if i < 0: raise OSError(ctypes.get_errno(), "shmget")
libc.shmctl(i, 0, None)`, none, true, ok},
		{"vsock", `socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)`, open, false, eperm},
		{"netlink sock_diag", `socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4)`, open, false, eperm},
		{"netlink route", `socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)`, none, false, ok},
		{"AF_ALG", `socket.socket(38, socket.SOCK_SEQPACKET)`, open, false, eperm},
		{"TCP with no port granted", `socket.socket()`, none, false, eperm},
		{"TCP to the proxy", `socket.socket()`, proxy, false, ok},
		{"UDP", `socket.socket(socket.AF_INET, socket.SOCK_DGRAM)`, proxy, false, eperm},
		{"UDP, network open", `socket.socket(socket.AF_INET, socket.SOCK_DGRAM)`, open, false, ok},
		{"SCTP stream", `socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)`, proxy, false, eperm},
		{"MPTCP", `socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)`, proxy, false, eperm},
		{"Fast Open sendto", `socket.socket().sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", 9))`, proxy, false, eperm},
		{"Fast Open sendmsg", `socket.socket().sendmsg([b"x"], [], socket.MSG_FASTOPEN, ("127.0.0.1", 9))`, proxy, false, eperm},
		{"TCP_FASTOPEN_CONNECT", `socket.socket().setsockopt(socket.IPPROTO_TCP, 30, 1)`, proxy, false, eperm},
		{"TCP_NODELAY", `socket.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)`, proxy, false, ok},
		{"listen with no bind granted", `socket.socket().listen()`, proxy, false, eperm},
		{"listen, network open", `socket.socket().listen()`, open, false, ok},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{
				ReadRoots: []string{base}, WriteRoots: []string{base}, TempDir: filepath.Join(base, "tmp"),
				Network: tc.net, PrivateIPC: tc.ipc,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			got := runProbe(t, sb, base, errnoProbe(tc.stmt), tty)
			if got != tc.errno {
				t.Errorf("%s: got %q, want %q", tc.stmt, got, tc.errno)
			}
		})
	}
}

// python3 is the system's interpreter where there is one: a version manager's shim (pyenv)
// is a shell script that costs a second per start.
func python3(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	return p
}
