package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchReadBatch: `bench --read-batch` runs its batch through `airlock call` as a new
// process and reports it, in plain text and as one JSON object with every field set; flags
// it cannot honour are refused. It asserts the shape, never a speed or a size.
func TestBenchReadBatch(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_AS_AIRLOCK", "1") // the child is this test binary (TestMain)
	code, out, errOut := runCmd(t, "", "bench", "--read-batch", "--n", "30", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not one JSON object: %v: %q", err, out)
	}
	if got["mode"] != "read-batch" || got["n"] != 30.0 || got["files"] != 100.0 || got["ok"] != 30.0 {
		t.Errorf("mode, n, files, ok: %v %v %v %v", got["mode"], got["n"], got["files"], got["ok"])
	}
	for _, k := range []string{"batch_s", "process_s", "peak_rss_mib", "peak_rss_file_mib", "peak_rss_anon_mib"} {
		if v, ok := got[k].(float64); !ok || v <= 0 {
			t.Errorf("%s: %v, want a positive number", k, got[k])
		}
	}
	if v, ok := got["raw_s"].(float64); !ok || v < 0 || !strings.Contains(got["raw"].(string), "os.ReadFile") {
		t.Errorf("raw: %v %v", got["raw_s"], got["raw"])
	}
	if note, _ := got["rss_note"].(string); !strings.Contains(note, "binary's own pages") {
		t.Errorf("rss_note %q does not say RSS includes the binary's pages", note)
	}

	code, out, errOut = runCmd(t, "", "bench", "--read-batch", "--n", "5")
	if code != 0 || !strings.Contains(out, "read-batch: 5 read_file calls") || !strings.Contains(out, "binary's own pages") ||
		!strings.Contains(out, "raw, same run: os.ReadFile") {
		t.Errorf("plain text: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	for _, args := range [][]string{
		{"--read-batch", "--cold-exec"},
		{"--read-batch", "--session-start"},
		{"--read-batch", "--backend", "docker"},
		{"--read-batch", "--config", "airlock.toml"},
		{"--read-batch", "--n", "0"},
	} {
		if code, out, errOut := runCmd(t, "", append([]string{"bench"}, args...)...); code == 0 || out != "" || errOut == "" {
			t.Errorf("bench %q: exit %d, stdout %q, stderr %q: want it refused", args, code, out, errOut)
		}
	}
}
