package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSSHAllowlistRefusalsOnTheirCalls runs `airlock call` on the SSH backend (helper mode)
// with [network] mode = "allowlist": two calls in one batch ask the egress proxy, through
// the port forwarded to the remote host, for hosts the allowlist does not name; each gets
// 403, and each refusal is a network_denied event in the ledger under its own call. The
// refused names are judged by the allowlist alone: nothing is resolved or dialled.
func TestSSHAllowlistRefusalsOnTheirCalls(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl for the remote client")
	}
	dir, _ := sshSetup(t)
	cfgPath := filepath.Join(dir, "airlock.toml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, string(cfg)+"[network]\nmode = \"allowlist\"\nallow_domains = [\"allowed.test\"]\n[ledger]\npath = \"ledger/receipts.jsonl\"\n")
	rs := call(t, dir, `[{"call_id":"c-ssh-a","name":"terminal","arguments":{"command":"curl -sS -m 10 -w ' code=%{http_code}' http://a-denied.test/"}},
{"call_id":"c-ssh-b","name":"terminal","arguments":{"command":"curl -sS -m 10 -p -w ' code=%{http_code}' https://b-denied.test/"}}]`)
	for _, r := range rs {
		if !strings.Contains(r.Content, "403") {
			t.Fatalf("%s: want a 403 from the proxy: %+v", r.CallID, r)
		}
	}
	ledger, err := os.ReadFile(filepath.Join(dir, "ledger", "receipts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{} // host → call
	for _, raw := range strings.Split(strings.TrimSpace(string(ledger)), "\n") {
		var l struct {
			Event   string `json:"event"`
			Receipt struct {
				CallID  string `json:"call_id"`
				Network *struct {
					Host         string `json:"host"`
					Reason       string `json:"reason"`
					Unattributed string `json:"unattributed"`
				} `json:"network"`
			} `json:"receipt"`
		}
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("ledger line %q: %v", raw, err)
		}
		if l.Event == "network_denied" && l.Receipt.Network != nil {
			if l.Receipt.Network.Reason != "not_allowlisted" {
				t.Errorf("refusal %s", raw)
			}
			got[l.Receipt.Network.Host] = l.Receipt.CallID
		}
	}
	if got["a-denied.test"] != "c-ssh-a" || got["b-denied.test"] != "c-ssh-b" || len(got) != 2 {
		t.Fatalf("network_denied events by host → call: %v", got)
	}
}
