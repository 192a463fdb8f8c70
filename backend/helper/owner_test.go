package helper

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

// TestOwnerNamesTheCallOfTheConnection: two commands of two calls connect to a listener
// here at the same time; the helper names, for each accepted connection, the call whose
// command holds its other end. A connection of this process names none.
func TestOwnerNamesTheCallOfTheConnection(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	c := pair(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dir := t.TempDir()
	var wg sync.WaitGroup
	for _, id := range []string{"call-1", "call-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := Request{Argv: []string{"bash", "-c", `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && echo ` + id + ` >&3 && read -r line <&3`},
				Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 20 * time.Second}
			if _, err := c.Exec(backend.WithCall(ctxFor(t), id), req); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}()
	}
	for range 2 {
		_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		name, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		client := conn.RemoteAddr().(*net.TCPAddr).AddrPort()
		server := conn.LocalAddr().(*net.TCPAddr).AddrPort()
		got, err := c.Owner(ctxFor(t), client, server)
		if err != nil || got != strings.TrimSpace(name) {
			t.Errorf("Owner of %s's connection = %q, %v", strings.TrimSpace(name), got, err)
		}
		conn.Write([]byte("bye\n"))
		defer conn.Close()
	}
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
	if got, err := c.Owner(context.Background(), acc.RemoteAddr().(*net.TCPAddr).AddrPort(), acc.LocalAddr().(*net.TCPAddr).AddrPort()); err == nil {
		t.Errorf("Owner of this process's connection = %q, want an error", got)
	} else {
		t.Logf("this process's connection: %v", err)
	}
	wg.Wait()
}
