package proctest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A process recorded in the host's own namespace is found while it runs and not after.
func TestAliveFindsAndLosesAProcess(t *testing.T) {
	cmd := exec.Command("sh", "-c", Record("$")+"; exec sleep 30")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 128)
	n, _ := out.Read(buf)
	rec := string(buf[:n])
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if !strings.HasSuffix(strings.TrimSpace(rec), ns) {
		t.Fatalf("record %q, want namespace %s", rec, ns)
	}
	if pid, ok := Alive(rec); !ok || pid != cmd.Process.Pid {
		t.Fatalf("Alive(%q) = %d, %v; want %d", rec, pid, ok, cmd.Process.Pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if pid, ok := Alive(rec); ok {
		t.Fatalf("killed process still found as %d", pid)
	}
	if _, ok := Alive("1 pid:[1]"); ok {
		t.Fatal("a namespace that does not exist matched")
	}
}
