package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Only address literals and names refused before any lookup appear here: the test sends no
// DNS query and dials nothing.
func TestURLCheckJSONL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line    string
		allowed bool
		reason  string
	}{
		{`"http://2852039166/latest/meta-data/"`, false, "metadata"},
		{`"http://[::ffff:a9fe:a9fe]/"`, false, "metadata"},
		{`"http://0251.254.169.254/"`, false, "metadata"},
		{`"http://169.254.0.1/"`, false, "link_local"},
		{`"http://example.com@127.0.0.1/"`, false, "loopback"},
		{`"http://0x7f.1/"`, false, "loopback"},
		{`"http://localhost:8080/"`, false, "loopback"},
		{`"http://10.0.0.1/"`, false, "private"},
		{`"http://metadata.google.internal/"`, false, "metadata"},
		{`"file:///etc/passwd"`, false, "unsupported_scheme"},
		{`not json`, false, "invalid_input"},
		{``, false, "invalid_input"},
		{`42`, false, "invalid_input"},
		{`"http://[::1"`, false, "invalid_host"},
		{`"http://93.184.215.14/"`, true, "allowed"},
		{`"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/x"`, true, "allowed"},
	}
	var in strings.Builder
	for _, c := range cases {
		in.WriteString(c.line + "\n")
	}
	in.WriteString(`"http://127.1/"`) // last line without a newline
	cfg := filepath.Join(t.TempDir(), "airlock.toml")
	if err := os.WriteFile(cfg, []byte("[network]\nmode = \"none\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, in.String(), "urlcheck", "--jsonl", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(cases)+1 {
		t.Fatalf("got %d lines for %d inputs: %q", len(lines), len(cases)+1, out)
	}
	cases = append(cases, struct {
		line    string
		allowed bool
		reason  string
	}{`"http://127.1/"`, false, "loopback"})
	for i, c := range cases {
		var v struct {
			URL     *string `json:"url"`
			Allowed *bool   `json:"allowed"`
			Reason  *string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil {
			t.Fatalf("line %d %q: %v", i+1, lines[i], err)
		}
		if v.URL == nil || v.Allowed == nil || v.Reason == nil {
			t.Fatalf("line %d %q lacks url, allowed or reason", i+1, lines[i])
		}
		if *v.Allowed != c.allowed || *v.Reason != c.reason {
			t.Errorf("input %s: allowed=%v reason=%s, want %v %s", c.line, *v.Allowed, *v.Reason, c.allowed, c.reason)
		}
		var want string
		if json.Unmarshal([]byte(c.line), &want) == nil && *v.URL != want {
			t.Errorf("input %s: url %q, want the input back", c.line, *v.URL)
		}
	}
}

func TestURLCheckAllowlistAndArgs(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "airlock.toml")
	if err := os.WriteFile(cfg, []byte("[network]\nmode = \"allowlist\"\nallow_domains = [\"93.184.215.14\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "urlcheck", "--config", cfg, "http://93.184.215.14/", "http://93.184.215.15/", "http://127.0.0.1/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"allowed http://93.184.215.14/: allowed", "refused http://93.184.215.15/: not_allowlisted", "refused http://127.0.0.1/: loopback"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	if code, _, _ := runCmd(t, "", "urlcheck"); code != 2 {
		t.Errorf("urlcheck without input: exit %d, want 2", code)
	}
	long := `"http://` + strings.Repeat("a", maxURLLine) + `/"` + "\n" + `"http://10.1.1.1/"` + "\n"
	code, out, _ = runCmd(t, long, "urlcheck", "--jsonl", "--config", cfg)
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "invalid_input") || !strings.Contains(out, `"reason":"private"`) {
		t.Fatalf("a too-long line must be answered and the next one too: exit %d, %q", code, out[:min(len(out), 400)])
	}
}
