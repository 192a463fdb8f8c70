package sockowner

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/backend/procgroup"
)

// ErrUnattributed is wrapped by every error of [Table.Owner]: the connection could not be
// tied to exactly one running command.
var ErrUnattributed = errors.New("no call named")

// Table maps the process-group leaders of running commands to the calls they run for. The
// zero value is not usable; make one with [New]. It is safe for concurrent use.
type Table struct {
	mu      sync.Mutex
	leaders map[int]string
	// starting counts the commands between [Table.Starting] and its done: they may already
	// run (a child runs from the fork on) without being listed yet.
	starting int
	// changed is closed, and replaced, whenever leaders or starting change.
	changed chan struct{}
	proc    string // the proc filesystem's mount point
	// waiting, when set (tests), is called as a lookup starts waiting for a start.
	waiting func()
}

// startWait bounds how long [Table.Owner] waits for commands being started to be listed.
const startWait = 2 * time.Second

// New returns an empty table.
func New() *Table {
	return &Table{leaders: map[int]string{}, changed: make(chan struct{}), proc: "/proc"}
}

// signal wakes the lookups waiting for a change; t.mu is held.
func (t *Table) signal() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Add records that the process group led by pid runs for tag (a call ID) until remove is
// called. Call remove before the leader is reaped (procgroup.Spec.Track does), so that its
// PID, and so the group ID, cannot stand for another process while it is listed.
func (t *Table) Add(pid int, tag string) (remove func()) {
	t.mu.Lock()
	t.leaders[pid] = tag
	t.signal()
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.leaders[pid] == tag {
				delete(t.leaders, pid)
			}
			t.signal()
			t.mu.Unlock()
		})
	}
}

// Starting is [Table.Track] for a command about to be started: call it before the fork,
// give track to procgroup.Spec.Track, and call done once the start returned (whether or not
// it succeeded). A child runs from the fork on, before its PID is known and listed: a lookup
// that finds no holder while a command is being started waits (at most startWait) for the
// start to finish and looks again, so a fast command's connection is never taken for no
// command's.
func (t *Table) Starting(tag string) (track func(pid int) (untrack func()), done func()) {
	t.mu.Lock()
	t.starting++
	t.mu.Unlock()
	var once sync.Once
	return t.Track(tag), func() {
		once.Do(func() {
			t.mu.Lock()
			t.starting--
			t.signal()
			t.mu.Unlock()
		})
	}
}

// TrackStart lists the command spec starts as running for tag: [Table.Starting] before the
// fork, spec.Track with its PID, and the start marked done when procgroup calls
// spec.Started (after Track). Call done once Start returned, for a start that failed; it
// does nothing after a start that succeeded.
func (t *Table) TrackStart(spec *procgroup.Spec, tag string) (done func()) {
	track, started := t.Starting(tag)
	spec.Track = track
	if next := spec.Started; next != nil {
		spec.Started = func() { started(); next() }
	} else {
		spec.Started = started
	}
	return started
}

// Track is [Table.Add] for a call, shaped for procgroup.Spec.Track.
func (t *Table) Track(tag string) func(pid int) (untrack func()) {
	return func(pid int) func() { return t.Add(pid, tag) }
}

// Len is the number of commands listed.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.leaders)
}

// Owner returns the tag of the one running command whose processes hold the TCP socket with
// local address client and remote address server — the connection as the command sees it,
// that is the accepted connection's remote and local addresses. The error wraps
// [ErrUnattributed] and says why when there is no such socket (the client already closed
// it), no listed command holds it, or commands of two tags do.
func (t *Table) Owner(client, server netip.AddrPort) (string, error) {
	inode, err := t.findSocket(client, server)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(startWait)
	for {
		t.mu.Lock()
		leaders := make(map[int]string, len(t.leaders))
		for pid, tag := range t.leaders {
			leaders[pid] = tag
		}
		starting, changed := t.starting, t.changed
		t.mu.Unlock()
		tag, err := t.holder(leaders, inode, client, server)
		left := time.Until(deadline)
		if err == nil || starting == 0 || left <= 0 {
			return tag, err
		}
		// A command being started may hold it and not be listed yet.
		if t.waiting != nil {
			t.waiting()
		}
		timer := time.NewTimer(left)
		select {
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// holder is the one tag among leaders whose processes hold the socket inode.
func (t *Table) holder(leaders map[int]string, inode uint64, client, server netip.AddrPort) (string, error) {
	if len(leaders) == 0 {
		return "", fmt.Errorf("%w: no command is running", ErrUnattributed)
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	w := walker{proc: t.proc, seen: map[int]bool{}}
	tags := map[string]bool{}
	for pid, tag := range leaders {
		if w.holds(pid, want) {
			tags[tag] = true
		}
	}
	// Orphans this process inherited as a subreaper keep their command's process group
	// unless they left it; those that left it are not ours to name.
	for _, pid := range w.orphans() {
		if w.seen[pid] {
			continue
		}
		if tag, ok := leaders[w.pgrp(pid)]; ok && w.holds(pid, want) {
			tags[tag] = true
		}
	}
	switch len(tags) {
	case 1:
		for tag := range tags {
			return tag, nil
		}
	case 0:
		return "", fmt.Errorf("%w: the socket %s→%s is held by no running command's process", ErrUnattributed, client, server)
	}
	return "", fmt.Errorf("%w: the socket %s→%s is held by processes of %d calls", ErrUnattributed, client, server, len(tags))
}

// findSocket returns the inode of the socket whose local and remote addresses are client
// and server, in this process's network namespace (see diag.go).
func (t *Table) findSocket(client, server netip.AddrPort) (uint64, error) {
	client = netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	var ino uint64
	var err error
	if !netlinkRefused.Load() && t.proc == "/proc" {
		ino, err = diagInode(client, server)
		if err == nil && ino == 0 && client.Addr().Is4() {
			// An IPv4 connection made from an IPv6 socket (mapped addresses).
			ino, err = diagInode(netip.AddrPortFrom(netip.AddrFrom16(client.Addr().As16()), client.Port()),
				netip.AddrPortFrom(netip.AddrFrom16(server.Addr().As16()), server.Port()))
		}
		if err != nil {
			netlinkRefused.Store(true)
		}
	}
	// The tables are read where netlink is refused, and when it found nothing: a kernel
	// without the tcp_diag handler answers ENOENT too, and a lookup that finds nothing is
	// the rare case (the client gave up before its answer).
	if ino == 0 || netlinkRefused.Load() || t.proc != "/proc" {
		ino, err = t.scanTables(client, server)
	}
	if err != nil {
		return 0, err
	}
	if ino == 0 {
		return 0, fmt.Errorf("%w: no open socket %s→%s (the client closed it?)", ErrUnattributed, client, server)
	}
	return ino, nil
}

// scanTables looks the socket up in /proc/net/tcp and tcp6.
func (t *Table) scanTables(client, server netip.AddrPort) (uint64, error) {
	if client.Addr().Is4() && server.Addr().Is4() {
		if ino, err := scanTable(t.proc+"/self/net/tcp", client, server); ino != 0 || err != nil {
			return ino, err
		}
	}
	c6 := netip.AddrPortFrom(netip.AddrFrom16(client.Addr().As16()), client.Port())
	s6 := netip.AddrPortFrom(netip.AddrFrom16(server.Addr().As16()), server.Port())
	return scanTable(t.proc+"/self/net/tcp6", c6, s6)
}

// scanTable reads one of /proc/net/tcp{,6}: "sl local rem st queues tr retr uid timeout
// inode …", addresses as the kernel's words in hex (each 32-bit word in host byte order),
// ports in hex. An inode of 0 (a socket no file refers to any more) counts as not found.
func scanTable(path string, local, remote netip.AddrPort) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("%w: %w", ErrUnattributed, err)
	}
	defer f.Close()
	l, r := procAddr(local), procAddr(remote)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	sc.Scan() // header
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 10 {
			continue
		}
		if !bytes.EqualFold(fields[1], l) || !bytes.EqualFold(fields[2], r) {
			continue
		}
		ino, err := strconv.ParseUint(string(fields[9]), 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		return ino, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%w: read %s: %w", ErrUnattributed, path, err)
	}
	return 0, nil
}

// procAddr spells ap as the socket tables do.
func procAddr(ap netip.AddrPort) []byte {
	var raw []byte
	if ap.Addr().Is4() {
		a := ap.Addr().As4()
		raw = a[:]
	} else {
		a := ap.Addr().As16()
		raw = a[:]
	}
	out := make([]byte, 0, len(raw)*2+5)
	for i := 0; i < len(raw); i += 4 {
		word := binary.NativeEndian.Uint32(raw[i : i+4])
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], word)
		out = hex.AppendEncode(out, b[:])
	}
	out = append(out, ':')
	var p [2]byte
	binary.BigEndian.PutUint16(p[:], ap.Port())
	return bytes.ToUpper(hex.AppendEncode(out, p[:]))
}

// walker visits process trees once each.
type walker struct {
	proc string
	seen map[int]bool
	// ppids is the fallback where children files do not exist: every process's parent,
	// read once.
	ppids map[int][]int
}

// holds reports whether pid or one of its descendants has want among its open files.
func (w *walker) holds(pid int, want string) bool {
	found := false
	stack := []int{pid}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w.seen[p] {
			continue
		}
		w.seen[p] = true
		if !found && w.hasFile(p, want) {
			found = true
		}
		stack = append(stack, w.children(p)...)
	}
	return found
}

func (w *walker) hasFile(pid int, want string) bool {
	dir := w.proc + "/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && target == want {
			return true
		}
	}
	return false
}

// orphans lists the children of this process that were handed to it as a subreaper: the
// kernel gives an orphan to the main thread, so only that thread's children file is read
// (this process's other threads may be many).
func (w *walker) orphans() []int {
	self := strconv.Itoa(os.Getpid())
	b, err := os.ReadFile(w.proc + "/" + self + "/task/" + self + "/children")
	if err != nil {
		return w.children(os.Getpid())
	}
	return pids(b)
}

func pids(b []byte) []int {
	var out []int
	for _, f := range bytes.Fields(b) {
		if c, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// children lists pid's children from the children file of each of its threads.
func (w *walker) children(pid int) []int {
	if w.ppids != nil {
		return w.ppids[pid]
	}
	base := w.proc + "/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(base + "/" + task.Name() + "/children")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// No children files on this kernel (or the task just ended): read every
				// process's parent once instead.
				w.scanParents()
				return w.ppids[pid]
			}
			continue
		}
		out = append(out, pids(b)...)
	}
	return out
}

// scanParents builds the parent map from every /proc/PID/stat (kernels without children
// files).
func (w *walker) scanParents() {
	w.ppids = map[int][]int{}
	entries, err := os.ReadDir(w.proc)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st := w.stat(pid); len(st) >= 2 {
			if pp, err := strconv.Atoi(string(st[1])); err == nil {
				w.ppids[pp] = append(w.ppids[pp], pid)
			}
		}
	}
}

// pgrp is pid's process group, or 0.
func (w *walker) pgrp(pid int) int {
	st := w.stat(pid)
	if len(st) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(string(st[2]))
	return g
}

// stat returns the fields of /proc/PID/stat after the command name: state, ppid, pgrp, ….
func (w *walker) stat(pid int) [][]byte {
	b, err := os.ReadFile(w.proc + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(b[i+1:])
}
