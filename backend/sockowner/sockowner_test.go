package sockowner

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary plays the commands: with SOCKOWNER_DIAL set it connects there (itself,
// or through a child of its own when SOCKOWNER_DEPTH > 0), writes one line and holds the
// connection until its stdin closes. No shell is involved.
func TestMain(m *testing.M) {
	if addr := os.Getenv("SOCKOWNER_DIAL"); addr != "" {
		switch os.Getenv("SOCKOWNER_ORPHAN") {
		case "leader": // start the middle, outlive it, wait for stdin to close
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "SOCKOWNER_ORPHAN=middle")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			_ = cmd.Run()
			bufio.NewReader(os.Stdin).ReadString('\n')
			os.Exit(0)
		case "middle": // start the client and leave it an orphan
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "SOCKOWNER_ORPHAN=")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			_ = cmd.Start()
			os.Exit(0)
		}
		depth, _ := strconv.Atoi(os.Getenv("SOCKOWNER_DEPTH"))
		if depth > 0 {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "SOCKOWNER_DEPTH="+strconv.Itoa(depth-1))
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			_ = cmd.Run()
			os.Exit(0)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			os.Exit(3)
		}
		c.Write([]byte(os.Getenv("SOCKOWNER_NAME") + "\n"))
		bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type client struct {
	cmd  *exec.Cmd
	conn net.Conn
}

// start runs a client named name at depth below the leader, and accepts its connection.
func start(t testing.TB, ln net.Listener, name string, depth int, env ...string) client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), "SOCKOWNER_DIAL="+ln.Addr().String(), "SOCKOWNER_NAME="+name, "SOCKOWNER_DEPTH="+strconv.Itoa(depth)), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a command leads its group, as procgroup starts it
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != name+"\n" {
		t.Fatalf("client %s said %q, %v", name, line, err)
	}
	return client{cmd: cmd, conn: c}
}

func addrs(t testing.TB, c net.Conn) (client, server netip.AddrPort) {
	t.Helper()
	return c.RemoteAddr().(*net.TCPAddr).AddrPort(), c.LocalAddr().(*net.TCPAddr).AddrPort()
}

func TestOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tab := New()
	a := start(t, ln, "a", 0)
	b := start(t, ln, "b", 2) // the socket is held by a grandchild of the leader
	removeA := tab.Add(a.cmd.Process.Pid, "call-a")
	defer removeA()
	defer tab.Add(b.cmd.Process.Pid, "call-b")()

	for _, tc := range []struct {
		name string
		c    client
		want string
	}{{"leader", a, "call-a"}, {"grandchild", b, "call-b"}} {
		cl, sv := addrs(t, tc.c.conn)
		got, err := tab.Owner(cl, sv)
		if err != nil || got != tc.want {
			t.Errorf("%s: Owner = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	// A connection of a process no listed command leads: not attributed, not guessed.
	mine, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	acc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	cl, sv := addrs(t, acc)
	if got, err := tab.Owner(cl, sv); !errors.Is(err, ErrUnattributed) {
		t.Errorf("own connection: Owner = %q, %v; want unattributed", got, err)
	}

	// Once the call is removed, its socket names nobody.
	removeA()
	cl, sv = addrs(t, a.conn)
	if got, err := tab.Owner(cl, sv); !errors.Is(err, ErrUnattributed) {
		t.Errorf("removed call: Owner = %q, %v; want unattributed", got, err)
	}

	// A socket the client closed is gone from the table.
	cl, sv = addrs(t, b.conn)
	b.cmd.Process.Kill()
	b.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := tab.Owner(cl, sv)
		if errors.Is(err, ErrUnattributed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed socket still attributed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOwnerOrphan: the client's parent exited while the command's leader still runs, so
// the client was handed to this process (a subreaper, as Airlock is); it is found by the
// process group it kept.
func TestOwnerOrphan(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skip(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tab := New()
	o := start(t, ln, "orphan", 0, "SOCKOWNER_ORPHAN=leader")
	defer tab.Add(o.cmd.Process.Pid, "call-o")()
	cl, sv := addrs(t, o.conn)
	// The middle process may not have exited yet: until it has, the client is found below
	// the leader; after, among the orphans. Either way it is the same call.
	got, err := tab.Owner(cl, sv)
	if err != nil || got != "call-o" {
		t.Fatalf("Owner = %q, %v", got, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !isOrphan(t) {
		if time.Now().After(deadline) {
			t.Fatal("the client never became an orphan of this process")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := tab.Owner(cl, sv); err != nil || got != "call-o" {
		t.Fatalf("orphan: Owner = %q, %v", got, err)
	}
}

// isOrphan reports whether one of this process's children (other than the leaders it
// started) is the client: its main thread's children file lists more than the leader.
func isOrphan(t *testing.T) bool {
	self := strconv.Itoa(os.Getpid())
	b, err := os.ReadFile("/proc/" + self + "/task/" + self + "/children")
	if err != nil {
		t.Skip("no children files")
	}
	w := walker{proc: "/proc", seen: map[int]bool{}}
	for _, pid := range pids(b) {
		if w.pgrp(pid) != pid { // not a group leader: the orphaned client
			return true
		}
	}
	return false
}

func TestProcAddr(t *testing.T) {
	// As /proc/net/tcp spells 127.0.0.1:44119 on a little-endian machine.
	got := string(procAddr(netip.MustParseAddrPort("127.0.0.1:44119")))
	if want := "0100007F:AC57"; got != want && binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		t.Errorf("procAddr = %s, want %s", got, want)
	}
}

// BenchmarkOwner is the lookup a refused request pays: one socket table read and the
// listed commands' processes, here two calls, one of them three processes deep.
func BenchmarkOwner(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	tab := New()
	a := start(b, ln, "a", 0)
	c := start(b, ln, "c", 2)
	defer tab.Add(a.cmd.Process.Pid, "call-a")()
	defer tab.Add(c.cmd.Process.Pid, "call-c")()
	cl, sv := addrs(b, c.conn)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got, err := tab.Owner(cl, sv); err != nil || got != "call-c" {
			b.Fatal(got, err)
		}
	}
}

// BenchmarkFindSocket sets the sock_diag lookup beside reading the /proc socket tables for
// the same connection, in the same run.
func BenchmarkFindSocket(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	cl, sv := c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
	tab := New()
	b.Run("sock_diag", func(b *testing.B) {
		for range b.N {
			if ino, err := diagInode(cl, sv); err != nil || ino == 0 {
				b.Fatal(ino, err)
			}
		}
	})
	b.Run("proc_net_tcp", func(b *testing.B) {
		for range b.N {
			if ino, err := tab.scanTables(cl, sv); err != nil || ino == 0 {
				b.Fatal(ino, err)
			}
		}
	})
}

// BenchmarkTrack is what every command of a call pays when its refusals are to be named:
// an entry in the table while it runs.
func BenchmarkTrack(b *testing.B) {
	tab := New()
	track := tab.Track("call-bench")
	for i := range b.N {
		track(100000 + i%1000)()
	}
}

// TestOwnerWaitsForAStart: a child runs from the fork on, before the PID that lists it is
// known. A lookup that comes in that gap — a command being started, its connection already
// made — waits for the start to finish and names the call; once no start is pending, a
// socket no listed command holds is unattributed at once.
func TestOwnerWaitsForAStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tab := New()
	waiting := make(chan struct{})
	var once sync.Once
	tab.waiting = func() { once.Do(func() { close(waiting) }) }
	track, started := tab.Starting("call-a")
	a := start(t, ln, "a", 0) // connected, and not listed yet
	cl, sv := addrs(t, a.conn)
	type answer struct {
		tag string
		err error
	}
	got := make(chan answer, 1)
	go func() {
		tag, err := tab.Owner(cl, sv)
		got <- answer{tag, err}
	}()
	// Only once the lookup found no holder and waits does the start finish.
	select {
	case <-waiting:
	case ans := <-got:
		t.Fatalf("Owner during a start did not wait for it: %q, %v", ans.tag, ans.err)
	}
	defer track(a.cmd.Process.Pid)()
	started()
	if ans := <-got; ans.err != nil || ans.tag != "call-a" {
		t.Fatalf("Owner during a start = %q, %v; want call-a", ans.tag, ans.err)
	}

	// With nothing being started, an unlisted holder is not waited for.
	b := start(t, ln, "b", 0)
	cl, sv = addrs(t, b.conn)
	tab.waiting = func() { t.Error("a lookup waited with no start pending") }
	if tag, err := tab.Owner(cl, sv); !errors.Is(err, ErrUnattributed) {
		t.Fatalf("unlisted holder: Owner = %q, %v; want unattributed", tag, err)
	}
}
