package receipt

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Event types.
const (
	EventDispatched = "dispatched"
	EventPending    = "pending"
	EventCompleted  = "completed"
	EventRecovered  = "ledger_recovered"
	// EventNetworkDenied records a connection the URL guard or the egress proxy refused,
	// under the call that tried it; Receipt.Network says where and why.
	EventNetworkDenied = "network_denied"
	// EventJobStarted and EventJobEnded record a background job, under the call that
	// started it: the call's own receipt says it was decided and dispatched, these say when
	// the job began and how it ended.
	EventJobStarted = "job_started"
	EventJobEnded   = "job_ended"
)

// genesis is the "previous hash" of the first line.
var genesis = hex.EncodeToString(make([]byte, sha256.Size))

// Line is one ledger line.
type Line struct {
	Seq     int64     `json:"seq"`
	Prev    string    `json:"prev"`
	Time    time.Time `json:"time"`
	Event   string    `json:"event"`
	Receipt *Receipt  `json:"receipt,omitempty"`
	// Note explains recovery events.
	Note string `json:"note,omitempty"`
	// Hash is the SHA-256 of the line as written without this field: it seals the line
	// itself, so that the last line, which no later line vouches for, cannot be edited
	// without recomputing it. It is always the line's last field. There is no key: a writer
	// who recomputes the chain is caught only by comparing the head with a copy kept
	// elsewhere (VerifyHead).
	Hash string `json:"hash"`
}

// Ledger appends hash-chained receipt events to a JSON Lines file. It is safe for concurrent
// use, and several processes may share one file: each append takes an exclusive lock and
// re-reads the chain's tail when another process wrote since.
type Ledger struct {
	mu   sync.Mutex
	f    *os.File
	path string
	// What this process last saw at the end of the file.
	size int64
	seq  int64
	prev string
	// lastLen is the length, with its newline, of the line that ends at size (0: none).
	lastLen int64
	// lastLine is that line as this process wrote it, when it did (else its length is not
	// lastLen): check compares bytes instead of parsing the line before every append.
	lastLine []byte
	// reserve is the space kept for receipts when the disk is full (see reserve.go).
	reserve     *os.File
	reserveSize int64
	// writeLine and syncFile write and sync the ledger file; tests inject failures.
	writeLine func(f *os.File, b []byte) (int, error)
	syncFile  func(f *os.File) error
	// Group commit (group.go): lines waiting for the next group, under qmu, and the
	// channel closed once that group is committed.
	qmu       sync.Mutex
	queue     []*pendingLine
	queueDone chan struct{}
	flushing  bool // the committer runs
	batchBuf  []byte
	// oneAtATime turns group commit off (WithoutGroupCommit).
	oneAtATime bool
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("ledger closed")

// Open opens or creates the ledger at path. A torn last line left by a crash is cut off and
// a ledger_recovered event, chained to the last good line, records its length and hash.
// The ledger keeps a reserve of [DefaultReserve] bytes beside it (see [WithReserve]); one
// that cannot be allocated now is not an error here, but no call is dispatched until it is.
func Open(path string, opts ...Option) (*Ledger, error) {
	l := &Ledger{path: path, prev: genesis, size: -1, reserveSize: DefaultReserve,
		writeLine: (*os.File).Write, syncFile: (*os.File).Sync}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l.f = f
	if err := l.withLock(func() error { _ = l.ensureReserve(); return nil }); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// Path returns the ledger's file name.
func (l *Ledger) Path() string { return l.path }

// Append writes one event for r and syncs it to disk. It returns once that line is durable;
// appends from several goroutines at once are committed together (see group.go).
func (l *Ledger) Append(event string, r *Receipt) error {
	if !l.oneAtATime {
		return l.appendGrouped(Line{Event: event, Receipt: r})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ErrClosed
	}
	return l.withLock(func() error { return l.appendSpending(Line{Event: event, Receipt: r}) })
}

// Close closes the file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reserve != nil {
		_ = l.reserve.Close()
		l.reserve = nil
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// withLock takes the file lock, brings the chain's tail up to date if the file changed
// since this process last wrote, and runs fn.
func (l *Ledger) withLock(fn func() error) error {
	if l.f == nil {
		return errors.New("ledger: closed")
	}
	if err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("ledger lock: %w", err)
	}
	// l.f may be replaced below by a file that continues the chain; the lock released is
	// the one held then.
	defer func() { _ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }()
	for moves := 0; ; moves++ {
		state, err := l.check()
		if err != nil {
			return err
		}
		if state == fileSame {
			break
		}
		if moves == maxMoves {
			return fmt.Errorf("ledger %s keeps being %s; receipts cannot be kept", l.path, state)
		}
		if err := l.follow(state); err != nil && !errors.Is(err, errRaced) {
			return err
		}
	}
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if fi.Size() != l.size {
		if err := l.reloadTail(); err != nil {
			return err
		}
	}
	return fn()
}

// tailWindow is how much of the file's end reloadTail reads first: enough for the last line
// and a torn one after it (a line is ~1-2 KB), so that opening a long ledger does not read
// all of it. A window that holds fewer than two line ends is made four times larger until
// it does or holds the whole file. (A window of 1 MiB made every cold start read, and scan,
// up to a megabyte.)
const tailWindow = 64 << 10

// reloadTail reads the end of the file to find the last good line, cutting a torn tail.
func (l *Ledger) reloadTail() error {
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	var start int64
	var data []byte
	for window := int64(tailWindow); ; window *= 4 {
		start = max(0, fi.Size()-window)
		if data, err = l.readFrom(start); err != nil {
			return err
		}
		if start == 0 || bytes.Count(data, []byte{'\n'}) >= 2 {
			break
		}
	}
	if start > 0 {
		// The window may begin mid-line; keep whole lines only.
		cut := bytes.IndexByte(data, '\n') + 1
		data, start = data[cut:], start+int64(cut)
	}
	good := len(data)
	if i := bytes.LastIndexByte(data, '\n'); i != len(data)-1 {
		good = i + 1 // a last line without its newline is torn
	}
	torn := data[good:]
	l.seq, l.prev = 0, genesis
	if good > 0 {
		body := data[:good-1]
		last := body
		if j := bytes.LastIndexByte(body, '\n'); j >= 0 {
			last = body[j+1:]
		}
		ln, err := parseLine(last)
		if err != nil {
			return fmt.Errorf("ledger %s: last line: %w (run 'airlock receipts verify')", l.path, err)
		}
		l.seq = ln.Seq
		l.prev = ln.Hash
		l.lastLen = int64(len(last) + 1)
		l.lastLine = append(append(l.lastLine[:0], last...), '\n')
	} else {
		l.lastLen, l.lastLine = 0, nil
	}
	l.size = start + int64(good)
	if len(torn) > 0 {
		if err := l.f.Truncate(l.size); err != nil {
			return fmt.Errorf("ledger: cut torn line: %w", err)
		}
		sum := sha256.Sum256(torn)
		note := fmt.Sprintf("cut a torn last line of %d bytes, sha256 %s", len(torn), hex.EncodeToString(sum[:]))
		return l.appendSpending(Line{Event: EventRecovered, Note: note})
	}
	return nil
}

// readFrom reads the file from offset to its end.
func (l *Ledger) readFrom(offset int64) ([]byte, error) {
	if _, err := l.f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	data, err := io.ReadAll(l.f)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return data, nil
}

func (l *Ledger) appendLocked(ln Line) error {
	ln.Seq = l.seq + 1
	ln.Prev = l.prev
	if ln.Time.IsZero() {
		ln.Time = time.Now().UTC()
	}
	data, hash, err := appendSealed(l.batchBuf[:0], ln)
	if err != nil {
		return fmt.Errorf("ledger encode: %w", err)
	}
	data = append(data, '\n')
	if cap(data) <= 1<<20 {
		l.batchBuf = data[:0]
	}
	// A line that is not durable is not left behind, whole or torn: the file is cut back to
	// the last line that is, so that the chain stays whole.
	if _, err := l.writeLine(l.f, data); err != nil {
		return errors.Join(fmt.Errorf("ledger write: %w", err), l.cutBack())
	}
	if err := l.syncFile(l.f); err != nil {
		return errors.Join(fmt.Errorf("ledger sync: %w", err), l.cutBack())
	}
	l.seq = ln.Seq
	l.prev = hash
	l.size += int64(len(data))
	l.lastLen = int64(len(data))
	l.lastLine = append(l.lastLine[:0], data...)
	return nil
}

// cutBack removes whatever a failed write left after the last durable line.
func (l *Ledger) cutBack() error {
	if err := l.f.Truncate(l.size); err != nil {
		return fmt.Errorf("ledger: cut back a line that was not written whole: %w", err)
	}
	_ = l.syncFile(l.f)
	return nil
}

// seal encodes ln with its Hash as the last field, computed over the encoding without it.
func seal(ln Line) ([]byte, string, error) { return appendSealed(nil, ln) }

// hashSuffix ends every line's encoding before its seal is set.
const hashSuffix = `,"hash":""}`

// appendSealed appends seal's encoding of ln to dst.
func appendSealed(dst []byte, ln Line) ([]byte, string, error) {
	ln.Hash = ""
	start := len(dst)
	out, ok := appendLine(dst, &ln)
	if !ok {
		body, err := json.Marshal(ln)
		if err != nil {
			return dst, "", err
		}
		out = append(out[:start], body...)
	}
	if bytes.HasSuffix(out[start:], []byte(hashSuffix)) {
		out = out[:len(out)-len(hashSuffix)]
	}
	out = append(out, '}')
	sum := sha256.Sum256(out[start:])
	hash := hex.EncodeToString(sum[:])
	out = append(out[:len(out)-1], `,"hash":"`...)
	out = append(out, hash...)
	return append(out, `"}`...), hash, nil
}

// parseLine decodes one line and checks its seal.
func parseLine(b []byte) (Line, error) {
	var ln Line
	if err := json.Unmarshal(b, &ln); err != nil {
		return ln, fmt.Errorf("not a ledger line: %w", err)
	}
	suffix := `,"hash":"` + ln.Hash + `"}`
	if len(ln.Hash) != 64 || !bytes.HasSuffix(b, []byte(suffix)) {
		return ln, errors.New("line has no seal (hash) as its last field")
	}
	sum := sha256.Sum256(append(append([]byte{}, b[:len(b)-len(suffix)]...), '}'))
	if hex.EncodeToString(sum[:]) != ln.Hash {
		return ln, errors.New("line does not match its own hash (it was changed)")
	}
	return ln, nil
}

// VerifyError names the first line that breaks the chain.
type VerifyError struct {
	Line   int // 1-based line number in the file
	Reason string
	// Torn is set when the only problem is an incomplete last line (a crash while writing).
	Torn bool
}

func (e *VerifyError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Verify reads a ledger and checks every line's sequence number and previous-line hash. It
// returns the number of good lines, and a *VerifyError for the first bad one.
func Verify(r io.Reader) (int, error) {
	n, _, err := VerifyHead(r)
	return n, err
}

// VerifyHead is Verify that also returns the hash of the last good line. The chain has no
// secret key: whoever can rewrite the file can rewrite the chain from the line they change
// on. Keeping the head somewhere else and comparing it later catches that too.
func VerifyHead(r io.Reader) (int, string, error) {
	c, err := VerifyChain(r)
	return c.Lines, c.Head, err
}

// Chain is what VerifyChain found in one ledger file.
type Chain struct {
	// Lines is the number of good lines; Head the hash of the last, LastSeq its sequence.
	Lines   int
	Head    string
	LastSeq int64
	// StartSeq and StartPrev are where the file's chain begins: 1 and the genesis hash, or,
	// for a file that continues another (its first line a ledger_continued event), that
	// line's sequence number and previous hash.
	StartSeq  int64
	StartPrev string
	// Continued lists the ledger_continued lines: where and why the chain moved files.
	Continued []Line
	hashes    map[string]bool
}

func (c Chain) has(hash string) bool { return c.hashes[hash] }

// VerifyChain checks every line's seal, sequence number and previous-line hash, and returns
// what it found with a *VerifyError for the first bad line. A file whose first line is a
// ledger_continued event may begin anywhere in a chain: a ledger that noticed its file
// unlinked or replaced goes on in a new one (see [EventContinued]).
func VerifyChain(r io.Reader) (Chain, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	c := Chain{Head: genesis, StartSeq: 1, StartPrev: genesis, hashes: map[string]bool{}}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return c, nil
		}
		if err != nil && err != io.EOF {
			return c, err
		}
		lineNo := c.Lines + 1
		if err == io.EOF { // no trailing newline
			return c, &VerifyError{Line: lineNo, Reason: "torn last line (incomplete write)", Torn: true}
		}
		ln, perr := parseLine(line[:len(line)-1])
		if perr != nil {
			return c, &VerifyError{Line: lineNo, Reason: perr.Error()}
		}
		if lineNo == 1 && ln.Event == EventContinued && ln.Seq > 1 {
			c.StartSeq, c.StartPrev, c.Head = ln.Seq, ln.Prev, ln.Prev
		}
		if want := c.StartSeq + int64(lineNo) - 1; ln.Seq != want {
			return c, &VerifyError{Line: lineNo, Reason: fmt.Sprintf("sequence %d, want %d (line removed or reordered)", ln.Seq, want)}
		}
		if ln.Prev != c.Head {
			return c, &VerifyError{Line: lineNo, Reason: "previous-line hash does not match (this or the previous line was changed)"}
		}
		if ln.Event == EventContinued {
			c.Continued = append(c.Continued, ln)
		}
		c.Head, c.LastSeq = ln.Hash, ln.Seq
		c.hashes[ln.Hash] = true
		c.Lines++
	}
}

// VerifyFile verifies the ledger at path.
func VerifyFile(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return Verify(f)
}

// ReadAll returns every line of a ledger, stopping at the first that does not parse.
func ReadAll(r io.Reader) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ln Line
		if err := json.Unmarshal(sc.Bytes(), &ln); err != nil {
			return out, fmt.Errorf("line %d: %w", len(out)+1, err)
		}
		out = append(out, ln)
	}
	return out, sc.Err()
}
