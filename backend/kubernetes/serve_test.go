package kubernetes_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend/helper/helpertest"
)

// TestServeSessionsSpreadAcrossNodes: a batch of sessions opened through `airlock serve`
// (the built binary, over its HTTP API) each gets a pod of its own, and the cluster's real
// scheduler places them on both nodes.
func TestServeSessionsSpreadAcrossNodes(t *testing.T) {
	cs, ns := client(t)
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) < 2 {
		t.Skipf("the cluster has %d node(s): nothing to spread over", len(nodes.Items))
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "airlock.toml")
	toml := clusterTOML(t, "", "state/receipts.jsonl")
	if err := os.WriteFile(config, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	url, token := startServe(t, helpertest.StaticBuild(t), config, dir)

	const sessions = 6
	hosts := make([]string, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s struct {
				ID string `json:"id"`
			}
			if errs[i] = post(url+"/v1/sessions", token, `{}`, &s); errs[i] != nil {
				return
			}
			var r struct {
				Status  string `json:"status"`
				Content string `json:"content"`
			}
			errs[i] = post(url+"/v1/sessions/"+s.ID+"/calls", token,
				fmt.Sprintf(`{"name":"terminal","call_id":"c%d","arguments":{"command":"hostname"}}`, i), &r)
			if errs[i] == nil && r.Status != "ok" {
				errs[i] = fmt.Errorf("hostname: %+v", r)
			}
			hosts[i] = strings.TrimSpace(r.Content)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A pod's hostname is its name.
	perNode, seen := map[string]int{}, map[string]bool{}
	for i, h := range hosts {
		if seen[h] {
			t.Errorf("session %d shares pod %s with another session", i, h)
		}
		seen[h] = true
		found := false
		for _, p := range pods.Items {
			if p.Name == h {
				found = true
				perNode[p.Spec.NodeName]++
			}
		}
		if !found {
			t.Errorf("session %d ran in %q, not a pod of namespace %s", i, h, ns)
		}
	}
	t.Logf("pods per node: %v", perNode)
	if len(perNode) < 2 {
		t.Errorf("the scheduler put all %d sessions' pods on one node: %v", sessions, perNode)
	}
}

// startServe runs `airlock serve` on 127.0.0.1:0 and returns its URL and the token it
// printed.
func startServe(t *testing.T, bin, config, dir string) (url, token string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", config, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "xdg-state"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("airlock serve stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(time.Minute)
	for url == "" {
		select {
		case ln, ok := <-lines:
			if !ok {
				t.Fatalf("airlock serve exited before listening:\n%s", stderr.String())
			}
			if strings.HasPrefix(ln, "alk_") {
				token = ln
			}
			if _, rest, ok := strings.Cut(ln, "listening on "); ok {
				url = strings.Fields(rest)[0]
			}
		case <-timeout:
			t.Fatalf("airlock serve did not say where it listens:\n%s", stderr.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	if token == "" {
		t.Fatal("airlock serve printed no token")
	}
	return url, token
}

// post sends body with the bearer token and decodes a 2xx answer into out.
func post(url, token, body string, out any) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, buf.String())
	}
	return json.Unmarshal(buf.Bytes(), out)
}
