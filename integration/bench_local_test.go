package integration

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLocalSessionStartAndColdExec: `airlock bench` on the local backend times a
// session's start beside its raw alternative (sh -c true in new namespaces of the helper's
// kinds), and a cold `airlock exec -- true` beside a raw fork/exec, each in the same run, and
// leaves no receipt in the workspace's own state directory.
func TestBenchLocalSessionStartAndColdExec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + state}
	out, errOut, code := run(t, dir, "", env, "bench", "--backend", "local", "--session-start", "--n", "2", "--burst", "2", "--json")
	if code != 0 {
		t.Fatalf("bench --session-start: %d %s", code, errOut)
	}
	s := sessionStartReport(t, out, 2)
	if s.Backend != "local" || s.Raw == nil || !strings.Contains(s.RawName, "new namespaces") {
		t.Fatalf("bench --session-start output: %s", out)
	}

	out, errOut, code = run(t, dir, "", env, "bench", "--cold-exec", "--n", "2", "--json")
	if code != 0 {
		t.Fatalf("bench --cold-exec: %d %s", code, errOut)
	}
	var c struct {
		Backend string  `json:"backend"`
		N       int     `json:"n"`
		P50     float64 `json:"p50_ms"`
		Raw     string  `json:"raw"`
		RawP50  float64 `json:"raw_p50_ms"`
		Ratio   float64 `json:"ratio_p50"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("bench output %q: %v", out, err)
	}
	if c.Backend != "local" || c.N != 2 || c.P50 <= 0 || c.RawP50 <= 0 || c.Ratio <= 0 || c.Raw == "" {
		t.Fatalf("bench --cold-exec output: %s", out)
	}
	if _, errOut, code := run(t, dir, "", env, "bench", "--cold-exec", "--backend", "docker", "--n", "1"); code == 0 || !strings.Contains(errOut, `not "docker"`) {
		t.Errorf("--cold-exec with another backend than the config's: exit %d, %s", code, errOut)
	}
	_ = filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("bench left %s in the state directory", p)
		}
		return nil
	})
}

// startFigures is one row of `airlock bench --session-start --json`.
type startFigures struct {
	Sequential, Burst struct {
		N   int     `json:"n"`
		P50 float64 `json:"p50_ms"`
	}
}

// startReport is what `airlock bench --session-start --json` prints.
type startReport struct {
	Backend string        `json:"backend"`
	Pool    int           `json:"pool"`
	Cold    startFigures  `json:"cold"`
	Warm    *startFigures `json:"warm"`
	RawName string        `json:"raw"`
	Raw     *startFigures `json:"raw_figures"`
}

// sessionStartReport decodes the report and checks that every row it has timed n opens,
// sequential and in a burst, each a positive p50.
func sessionStartReport(t *testing.T, out string, n int) startReport {
	t.Helper()
	var r startReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench output %q: %v", out, err)
	}
	for name, rw := range map[string]*startFigures{"cold": &r.Cold, "warm": r.Warm, "raw": r.Raw} {
		if rw != nil && (rw.Sequential.N != n || rw.Burst.N != n || rw.Sequential.P50 <= 0 || rw.Burst.P50 <= 0) {
			t.Errorf("%s: %+v in %s", name, *rw, out)
		}
	}
	return r
}

// TestBenchLocalParts: `airlock bench --parts` times, beside the commands and the raw
// fork/exec, a round trip to the helper with nothing run (a read of a missing file, answered
// not_found), and every bench says what host timed it, so that a figure from another host
// can be split into the message's cost and the command's start.
func TestBenchLocalParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errOut, code := run(t, dir, "", []string{"XDG_STATE_HOME=" + t.TempDir()}, "bench", "--backend", "local", "--n", "5", "--parts", "--json")
	if code != 0 {
		t.Fatalf("bench --parts: %d %s", code, errOut)
	}
	var r struct {
		Mode      string  `json:"mode"`
		P50       float64 `json:"p50_ms"`
		RawP50    float64 `json:"raw_p50_ms"`
		RoundTrip *struct {
			Name string  `json:"name"`
			P50  float64 `json:"p50_ms"`
			P99  float64 `json:"p99_ms"`
		} `json:"round_trip"`
		Host struct {
			CPUs   int    `json:"cpus"`
			Procs  int    `json:"gomaxprocs"`
			Kernel string `json:"kernel"`
		} `json:"host"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench output %q: %v", out, err)
	}
	switch {
	case r.RoundTrip == nil || r.RoundTrip.P50 <= 0 || r.RoundTrip.P99 < r.RoundTrip.P50 || !strings.Contains(r.RoundTrip.Name, "missing file"):
		t.Fatalf("no round trip timed: %s", out)
	case r.Host.CPUs < 1 || r.Host.Procs < 1 || r.Host.Kernel == "":
		t.Errorf("no host in the figures: %s", out)
	case r.P50 <= 0 || r.RawP50 <= 0:
		t.Errorf("no commands timed beside the round trip: %s", out)
	}
	t.Logf("%s: command p50 %.3f ms, raw %.3f ms, round trip %.3f ms", r.Mode, r.P50, r.RawP50, r.RoundTrip.P50)
}
