package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/internal/gctune"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

// The load of the issue: 16 concurrent clients across 8 sessions, small read_file calls.
const (
	loadClients  = 16
	loadSessions = 8
)

// loadCalls is the number of calls in a load run: AIRLOCK_LOAD_CALLS, else def.
func loadCalls(t testing.TB, def int) int {
	if s := os.Getenv("AIRLOCK_LOAD_CALLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < loadClients {
			t.Fatalf("AIRLOCK_LOAD_CALLS=%q: want a number >= %d", s, loadClients)
		}
		return n
	}
	return def
}

// loadResult is what one load run measured.
type loadResult struct {
	calls    int
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r loadResult) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

func (r loadResult) String() string {
	return fmt.Sprintf("%d calls in %v: %.0f calls/s, p50 %v, p99 %v", r.calls, r.elapsed.Round(time.Millisecond),
		r.rate(), r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond))
}

// runLoad sends n read_file calls, each with its own call id (prefix and a number), from
// loadClients clients spread over the sessions, each on its own keep-alive loopback
// connection (see loadClient).
func runLoad(t testing.TB, f *fixture, sessions []string, prefix string, n int) loadResult {
	t.Helper()
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for c := range loadClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lc, err := dialLoad(f, sessions[c%len(sessions)])
			if err != nil {
				failed.Store(err)
				return
			}
			defer lc.close()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				id := prefix + strconv.Itoa(i)
				t0 := time.Now()
				if err := lc.call(id); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	return loadResult{calls: n, elapsed: elapsed, p50: lat[n/2], p99: lat[n*99/100]}
}

// loadClient is one client of the load: HTTP/1.1 on one keep-alive loopback connection,
// one request at a time, the request written from a buffer it reuses and the response read
// by net/http's own parser (http.ReadResponse). It is the cheapest honest client: the
// benchmark's clients run in the server's process, and http.Client's transport (a reader
// and a writer goroutine per connection, a request and header maps per call) was ~18 % of
// that process's CPU, which the server's own figures paid for.
type loadClient struct {
	conn net.Conn
	br   *bufio.Reader
	head string // the request line and headers, up to the Content-Length value
	buf  []byte
	resp []byte
}

func dialLoad(f *fixture, session string) (*loadClient, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		return nil, err
	}
	return &loadClient{
		conn: conn, br: bufio.NewReader(conn),
		head: "POST /v1/sessions/" + session + "/calls HTTP/1.1\r\nHost: " + strings.TrimPrefix(f.url, "http://") +
			"\r\nAuthorization: Bearer " + aliceToken + "\r\nContent-Type: application/json\r\nContent-Length: ",
	}, nil
}

func (c *loadClient) close() { _ = c.conn.Close() }

// call makes one call and checks that it ran and answered with its own receipt.
func (c *loadClient) call(id string) error {
	body := `{"name":"read_file","arguments":{"path":"small.txt"},"call_id":"` + id + `"}`
	c.buf = append(append(strconv.AppendInt(append(c.buf[:0], c.head...), int64(len(body)), 10), "\r\n\r\n"...), body...)
	if _, err := c.conn.Write(c.buf); err != nil {
		return fmt.Errorf("call %s: %w", id, err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return fmt.Errorf("call %s: %w", id, err)
	}
	c.resp, err = readAllInto(c.resp[:0], resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("call %s: %w", id, err)
	}
	return checkAnswer(id, resp.StatusCode, c.resp)
}

// readAllInto appends what r holds to buf.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// checkAnswer checks that a call's answer is a 200 whose result ran and carries the call's
// own receipt. It decodes only the fields it checks; json.Unmarshal still checks that the
// whole answer is valid JSON.
func checkAnswer(id string, status int, data []byte) error {
	var r struct {
		CallID  string          `json:"call_id"`
		Status  pipeline.Status `json:"status"`
		Receipt *struct {
			CallID string `json:"call_id"`
		} `json:"receipt"`
	}
	if err := json.Unmarshal(data, &r); err != nil || status != 200 {
		return fmt.Errorf("call %s: %d %s", id, status, data)
	}
	if r.Status != pipeline.StatusOK || r.CallID != id || r.Receipt == nil || r.Receipt.CallID != id {
		return fmt.Errorf("call %s: answered %s", id, data)
	}
	return nil
}

// checkReceipts checks that the ledger verifies and holds, for each of the n calls of the
// run, exactly one dispatched and one completed line, the dispatched first.
func checkReceipts(t testing.TB, f *fixture, prefix string, n int) {
	t.Helper()
	seen := make(map[string][2]int, n)
	for _, ln := range f.receipts(t) {
		if ln.Receipt == nil || !strings.HasPrefix(ln.Receipt.CallID, prefix) {
			continue
		}
		s := seen[ln.Receipt.CallID]
		switch ln.Event {
		case receipt.EventDispatched:
			if s[1] > 0 {
				t.Errorf("call %s: dispatched after completed", ln.Receipt.CallID)
			}
			s[0]++
		case receipt.EventCompleted:
			s[1]++
		}
		seen[ln.Receipt.CallID] = s
	}
	if len(seen) != n {
		t.Errorf("%d calls in the ledger, want %d", len(seen), n)
	}
	for i := range n {
		if s := seen[prefix+strconv.Itoa(i)]; s != [2]int{1, 1} {
			t.Errorf("call %s%d: %d dispatched and %d completed lines, want 1 and 1", prefix, i, s[0], s[1])
		}
	}
}

// loadFixture serves a runtime with the sessions of the load opened and warm.
func loadFixture(t testing.TB, opts ...engine.Option) (*fixture, []string) {
	f := newFixture(t, "", opts...)
	must(t, os.WriteFile(filepath.Join(f.ws, "small.txt"), []byte("hello\n"), 0o644))
	sessions := make([]string, loadSessions)
	for i := range sessions {
		sessions[i] = f.session(t, aliceToken).ID
	}
	runLoad(t, f, sessions, "warm-", 4*loadClients)
	return f, sessions
}

// TestServeLoad is the load test, bounded: 16 clients over 8 sessions make small
// read_file calls (AIRLOCK_LOAD_CALLS, 2,000 by default; 20,000 is the figure, see
// BenchmarkServeLoad). Every call is answered with its receipt; the ledger verifies and
// holds each call exactly once dispatched and once completed; afterwards no goroutine or
// descriptor is left over and the heap is back where it was.
func TestServeLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: not with -short")
	}
	n := loadCalls(t, 2000)
	f, sessions := loadFixture(t)
	runtime.GC()
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	res := runLoad(t, f, sessions, "load-", n)
	t.Logf("group commit: %v", res)
	checkReceipts(t, f, "load-", n)

	// Idle keep-alive connections of the clients are closed by runLoad; the server's side
	// goes when it reads their close.
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		g, d := runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines && d <= fds {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the load: %d goroutines (before %d), %d descriptors (before %d)", g, goroutines, d, fds)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 32<<20 {
		t.Errorf("heap in use grew by %d MiB over the load", grew>>20)
	}
	t.Logf("heap in use %d MiB before, %d MiB after; peak RSS of the test process %d MiB",
		before.HeapInuse>>20, after.HeapInuse>>20, peakRSS(t)>>20)
}

// BenchmarkServeLoad runs the load (AIRLOCK_LOAD_CALLS, 20,000 by default) with group
// commit and with every ledger line appended one at a time, in the same run; run it with
// -benchtime 1x. It reports calls/s and the p50 and p99 latency of a call.
//
// The test process's collector is set as `airlock serve` sets its own (gctune.Serve), unless
// GOGC or GOMEMLIMIT is set; the benchmark's clients, in the same process, get it too.
func BenchmarkServeLoad(b *testing.B) {
	n := loadCalls(b, 20000)
	percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(percent)
	if gctune.Apply(gctune.Serve) {
		defer debug.SetMemoryLimit(limit)
		defer debug.SetGCPercent(percent)
	}
	for _, mode := range []struct {
		name string
		opts []engine.Option
	}{
		{"group", nil},
		{"one-at-a-time", []engine.Option{engine.WithLedgerOptions(receipt.WithoutGroupCommit())}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			f, sessions := loadFixture(b, mode.opts...)
			var res loadResult
			var cpu cpuTimes
			for i := 0; b.Loop(); i++ {
				prefix := fmt.Sprintf("load%d-", i)
				cpu0 := treeCPU(b)
				res = runLoad(b, f, sessions, prefix, n)
				cpu = treeCPU(b).sub(cpu0)
				checkReceipts(b, f, prefix, n)
			}
			perCall := cpu.total() / time.Duration(n)
			b.ReportMetric(res.rate(), "calls/s")
			b.ReportMetric(float64(res.p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(res.p99.Microseconds()), "p99-µs")
			b.ReportMetric(float64(perCall.Microseconds()), "cpu-µs/call")
			b.Logf("%s: %v; CPU %v a call (server and clients %v, helpers %v in all); peak RSS %d MiB",
				mode.name, res, perCall.Round(time.Microsecond), cpu.self.Round(10*time.Millisecond),
				cpu.below.Round(10*time.Millisecond), peakRSS(b)>>20)
		})
	}
}

// treeCPU is the CPU time used so far by the test process (the server and the load's
// clients) and every process below it (the sessions' helpers), from /proc, whose figures
// are in clock ticks of 10 ms.
func treeCPU(t testing.TB) cpuTimes {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	must(t, err)
	type proc struct{ ppid, ticks int }
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// After the command name, in parentheses: state, ppid, … utime (14th field), stime.
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.Atoi(f[11])
		stime, _ := strconv.Atoi(f[12])
		procs[pid] = proc{ppid, utime + stime}
	}
	var ticks [2]int
	for pid, p := range procs {
		for q := pid; q > 1; q = procs[q].ppid {
			if q == os.Getpid() {
				below := 1
				if pid == q {
					below = 0 // the test process itself
				}
				ticks[below] += p.ticks
				break
			}
		}
	}
	if pid := os.Getpid(); procs[pid].ticks == 0 && procs[pid].ppid == 0 {
		t.Fatal("treeCPU: the test process is not in /proc")
	}
	return cpuTimes{self: time.Duration(ticks[0]) * 10 * time.Millisecond, below: time.Duration(ticks[1]) * 10 * time.Millisecond}
}

// cpuTimes is CPU time of the test process and of the processes below it.
type cpuTimes struct{ self, below time.Duration }

func (c cpuTimes) sub(d cpuTimes) cpuTimes { return cpuTimes{c.self - d.self, c.below - d.below} }
func (c cpuTimes) total() time.Duration    { return c.self + c.below }

func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(ents)
}

// peakRSS is the test process's peak resident set (VmHWM), which holds the server.
func peakRSS(t testing.TB) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	must(t, err)
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
