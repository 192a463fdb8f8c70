package servetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/configs/configtest"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

// airlockBin is the binary built once for the package's tests.
var airlockBin string

func TestMain(m *testing.M) {
	buildtest.Main(m, "servetest", &airlockBin, nil)
}

// server is one `airlock serve` process.
type server struct {
	cmd    *exec.Cmd
	url    string
	token  string
	ws     string
	ledger string
	state  string
	stderr *bytes.Buffer
	exited chan error
	// lines are the stdout lines after the listening line.
	out []string
}

// project writes a config for a local workspace with its ledger in the test's directory.
func project(t *testing.T, extra string) (dir, config string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	config = filepath.Join(dir, "airlock.toml")
	cfg := "[environment]\ntype = \"local\"\nworkspace = \"ws\"\ntimeout = 60\n[ledger]\npath = \"state/receipts.jsonl\"\n" + configtest.AskToRunCode(extra)
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, config
}

// start runs `airlock serve` on 127.0.0.1:0 and reads the address and the token it prints.
func start(t *testing.T, dir, config string, args ...string) *server {
	t.Helper()
	s := &server{ws: filepath.Join(dir, "ws"), ledger: filepath.Join(dir, "state", "receipts.jsonl"),
		state: filepath.Join(dir, "xdg-state"), stderr: new(bytes.Buffer), exited: make(chan error, 1)}
	s.cmd = exec.Command(airlockBin, append([]string{"serve", "--config", config, "--addr", "127.0.0.1:0"}, args...)...)
	s.cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+s.state, "AIRLOCK_LOG_LEVEL=info")
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM first, as a user's service manager would: serve closes its sessions, and
		// a local session's temp dir goes with it. SIGKILL only when it does not end.
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-s.exited:
			s.exited <- err
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
		}
		<-s.exited
		if t.Failed() {
			t.Logf("airlock serve stderr:\n%s", s.stderr)
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		s.exited <- s.cmd.Wait()
	}()
	timeout := time.After(30 * time.Second)
	for s.url == "" {
		select {
		case ln, ok := <-lines:
			if !ok {
				t.Fatalf("airlock serve exited before listening:\n%s", s.stderr)
			}
			s.out = append(s.out, ln)
			if strings.HasPrefix(ln, "alk_") {
				s.token = ln
			}
			if _, rest, ok := strings.Cut(ln, "listening on "); ok {
				s.url = strings.Fields(rest)[0]
			}
		case <-timeout:
			t.Fatalf("airlock serve did not say where it listens:\n%s", s.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	if s.token == "" {
		data, err := os.ReadFile(filepath.Join(s.stateDir(t), "serve-token"))
		if err != nil {
			t.Fatal(err)
		}
		s.token = strings.TrimSpace(string(data))
	}
	return s
}

// stateDir is the workspace's directory under the test's XDG_STATE_HOME.
func (s *server) stateDir(t *testing.T) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(s.state, "airlock", "ws-*"))
	if len(m) != 1 {
		t.Fatalf("state directories: %v", m)
	}
	return m[0]
}

// do sends a request with the server's token and decodes a JSON answer into v.
func (s *server) do(t *testing.T, method, path, body string, v any) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(s.request(method, path, body))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// request is a request with the server's token.
func (s *server) request(method, path, body string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	return req
}

func (s *server) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (s *server) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case err := <-s.exited:
		s.exited <- err // for the cleanup
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		t.Fatalf("airlock serve still running %s after the signal", d)
	}
	return -1
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("no file %s", path)
}

var _ = context.Background
