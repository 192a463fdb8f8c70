package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// `airlock bench --read-batch` measures what issue 19 asks of a large batch: N read_file calls
// in one `airlock call`, its wall time and the largest resident set of the process, as a user
// who pipes a batch into the command meets them. The process is this binary started afresh,
// so its resident set includes the binary's own pages (file-backed, some tens of MiB that do
// not grow with the batch) as well as what the batch costs; the sampled anonymous and
// file-backed peaks say which is which.

const (
	readBatchDefaultN = 10000
	readBatchFiles    = 100
	readBatchContent  = "line one\nline two\n"
	// readBatchConfig is the temporary workspace's config: the local backend, the ledger in
	// the workspace's own state directory.
	readBatchConfig = "[environment]\ntype = \"local\"\nworkspace = \"ws\"\n[ledger]\npath = \"state/receipts.jsonl\"\n"
	rssNote         = "RSS includes the binary's own pages (file-backed: rss_file), not only the batch's memory (rss_anon)"
)

// readBatchResult is the JSON `airlock bench --read-batch --json` prints.
type readBatchResult struct {
	Mode  string `json:"mode"` // "read-batch"
	N     int    `json:"n"`
	Files int    `json:"files"`
	OK    int    `json:"ok"` // results with status ok
	// BatchS is from the first call received to the last call finished, by their receipts;
	// ProcessS is the process's, from its start to its exit.
	BatchS   float64 `json:"batch_s"`
	ProcessS float64 `json:"process_s"`
	// PeakRSSMiB is the process's rusage maxrss (the largest resident set it had; a process
	// it waited for counts only where larger). The anonymous and file-backed peaks are
	// sampled from /proc every few milliseconds, so they may miss the top by a little.
	PeakRSSMiB     float64 `json:"peak_rss_mib"`
	PeakRSSAnonMiB float64 `json:"peak_rss_anon_mib"`
	PeakRSSFileMiB float64 `json:"peak_rss_file_mib"`
	RSSNote        string  `json:"rss_note"`
	// RawS is the raw alternative timed in the same run: the same N files read with
	// os.ReadFile in a loop in the bench's own process, no policy, receipt or sandbox.
	RawS float64 `json:"raw_s"`
	Raw  string  `json:"raw"`
}

// benchExecutable is the airlock binary the bench starts: this one.
var benchExecutable = os.Executable

func runReadBatch(ctx context.Context, n int, asJSON bool, s stdio) int {
	dir, err := os.MkdirTemp("", "airlock-bench-batch-")
	if err != nil {
		return fail(s, err)
	}
	defer os.RemoveAll(dir)
	if err := writeReadBatch(dir, n); err != nil {
		return fail(s, err)
	}
	r, err := runBatchChild(ctx, dir)
	if err != nil {
		return fail(s, err)
	}
	r.Mode, r.N, r.Files, r.RSSNote = "read-batch", n, readBatchFiles, rssNote
	if r.OK != n {
		return fail(s, fmt.Errorf("airlock call: %d of %d read_file calls ok", r.OK, n))
	}
	start := time.Now()
	for i := range n {
		if _, err := os.ReadFile(filepath.Join(dir, "ws", readBatchFile(i))); err != nil {
			return fail(s, fmt.Errorf("raw read: %w", err))
		}
	}
	r.RawS, r.Raw = time.Since(start).Seconds(), "os.ReadFile of the same files in a loop, in process"
	printReadBatch(s, r, asJSON)
	return 0
}

func readBatchFile(i int) string { return "f" + strconv.Itoa(i%readBatchFiles) + ".txt" }

// writeReadBatch makes dir a workspace of readBatchFiles small files with its config, and
// batch.json, n read_file calls over those files.
func writeReadBatch(dir string, n int) error {
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		return err
	}
	for i := range readBatchFiles {
		if err := os.WriteFile(filepath.Join(dir, "ws", readBatchFile(i)), []byte(readBatchContent), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "airlock.toml"), []byte(readBatchConfig), 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"read_file","arguments":{"path":%q},"call_id":"c%d"}`, readBatchFile(i), i)
	}
	b.WriteByte(']')
	return os.WriteFile(filepath.Join(dir, "batch.json"), b.Bytes(), 0o644)
}

// runBatchChild runs `airlock call` in dir with batch.json on its stdin and its results to
// a file, read once it has exited (decoded meanwhile, they would take a core from it), and
// returns what it measured of the process.
func runBatchChild(ctx context.Context, dir string) (readBatchResult, error) {
	var r readBatchResult
	exe, err := benchExecutable()
	if err != nil {
		return r, err
	}
	in, err := os.Open(filepath.Join(dir, "batch.json"))
	if err != nil {
		return r, err
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(dir, "results.json"))
	if err != nil {
		return r, err
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, "call", "--config", filepath.Join(dir, "airlock.toml"))
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, in, out, &stderr
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	stopSampling := sampleRSS(cmd.Process.Pid)
	werr := cmd.Wait()
	r.ProcessS = time.Since(start).Seconds()
	r.PeakRSSAnonMiB, r.PeakRSSFileMiB = stopSampling()
	if werr != nil {
		return r, fmt.Errorf("airlock call: %w: %s", werr, bytes.TrimSpace(stderr.Bytes()))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.PeakRSSMiB = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return r, err
	}
	ok, span, err := decodeBatchResults(out)
	if err != nil {
		return r, fmt.Errorf("airlock call's results: %w", err)
	}
	r.OK, r.BatchS = ok, span.Seconds()
	return r, nil
}

// decodeBatchResults reads a JSON array of results one at a time: how many are ok, and the
// time from the first call received to the last call finished.
func decodeBatchResults(rd io.Reader) (ok int, span time.Duration, err error) {
	dec := json.NewDecoder(rd)
	if _, err := dec.Token(); err != nil {
		return 0, 0, err
	}
	var first, last time.Time
	for dec.More() {
		var res struct {
			Status  string `json:"status"`
			Receipt *struct {
				ReceivedAt time.Time  `json:"received_at"`
				FinishedAt *time.Time `json:"finished_at"`
			} `json:"receipt"`
		}
		if err := dec.Decode(&res); err != nil {
			return ok, 0, err
		}
		if res.Status == "ok" {
			ok++
		}
		if rc := res.Receipt; rc != nil {
			if first.IsZero() || rc.ReceivedAt.Before(first) {
				first = rc.ReceivedAt
			}
			if rc.FinishedAt != nil && rc.FinishedAt.After(last) {
				last = *rc.FinishedAt
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return ok, 0, err
	}
	if last.Before(first) {
		return ok, 0, errors.New("no call finished")
	}
	return ok, last.Sub(first), nil
}

// sampleRSS reads pid's RssAnon and RssFile every few milliseconds until the returned
// function is called, which returns their peaks in MiB.
func sampleRSS(pid int) (stop func() (anon, file float64)) {
	done := make(chan struct{})
	peaks := make(chan [2]float64, 1)
	status := "/proc/" + strconv.Itoa(pid) + "/status"
	go func() {
		var p [2]float64
		t := time.NewTicker(3 * time.Millisecond)
		defer t.Stop()
		for {
			if b, err := os.ReadFile(status); err == nil {
				p[0] = max(p[0], statusMiB(b, "RssAnon:"))
				p[1] = max(p[1], statusMiB(b, "RssFile:"))
			}
			select {
			case <-done:
				peaks <- p
				return
			case <-t.C:
			}
		}
	}()
	return func() (float64, float64) {
		close(done)
		p := <-peaks
		return p[0], p[1]
	}
}

// statusMiB reads a "Key:   123 kB" line of /proc/PID/status, in MiB.
func statusMiB(status []byte, key string) float64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

func printReadBatch(s stdio, r readBatchResult, asJSON bool) {
	if asJSON {
		out, _ := json.Marshal(r)
		fmt.Fprintln(s.out, string(out))
		return
	}
	fmt.Fprintf(s.out, "read-batch: %d read_file calls in one batch through airlock call (local backend, %d files), %d ok\n", r.N, r.Files, r.OK)
	fmt.Fprintf(s.out, "  batch %.3f s (first call received to last finished); process %.3f s (start to exit)\n", r.BatchS, r.ProcessS)
	fmt.Fprintf(s.out, "  peak RSS %.1f MiB (sampled: anon %.1f MiB, file %.1f MiB); %s\n", r.PeakRSSMiB, r.PeakRSSAnonMiB, r.PeakRSSFileMiB, r.RSSNote)
	fmt.Fprintf(s.out, "  raw, same run: %s: %.3f s\n", r.Raw, r.RawS)
}
