//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// RequiredABI is the lowest Landlock ABI the sandbox can be delivered on: 4 brought TCP
// rules, 5 device ioctls, 6 the scoping that keeps a command from signalling Airlock.
const RequiredABI = 6

// Probe reports the kernel's Landlock ABI version, 0 when Landlock is missing or disabled.
type Probe func() int

// KernelABI is the real probe.
func KernelABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// Option adjusts New.
type Option func(*options)

type options struct{ probe Probe }

// WithProbe replaces the kernel probe (tests use it to play a kernel without Landlock).
func WithProbe(p Probe) Option { return func(o *options) { o.probe = p } }

// Sandbox is a built set of restrictions. The zero of enforcement (mode off, or auto on a
// kernel without Landlock) is a Sandbox too: Do then runs its function as it is, and
// Enforced and Notes say so.
type Sandbox struct {
	mode     Mode
	abi      int
	enforced bool
	reason   string // why not enforced
	policy   Policy
	denyUnix bool
	// afterPut, set by tests before any worker is made, runs on a worker between listing
	// itself idle and going back to its channel: it widens the window in which a hand-over
	// finds it there.
	afterPut func()

	// mu guards the fields below: the current generation of restricted threads, and
	// whether the sandbox is closed.
	mu     sync.Mutex
	gen    *generation
	closed bool
}

// generation is one ruleset and the threads restricted by it. Landlock binds a rule to
// the file it names when the ruleset is made, so a granted file replaced by a rename (useradd
// rewriting /etc/passwd, a resolver rewriting /etc/resolv.conf, a file tool's atomic write
// into a directory split around a protected file) is no longer granted to threads restricted
// before. The directories whose entries were granted one by one are stamped; when a stamp
// changes, the next command gets a new generation planned from the filesystem as it is, and
// the old generation's threads end.
type generation struct {
	owner      *Sandbox
	fd         int
	layout     layout
	stamps     []stamp
	lastFull   time.Time // when the stamps were last all found current by path (stamps.go)
	made       time.Time
	refreshing bool // a new generation is being planned in its place (refresh); the sandbox's lock guards it
	network    Network
	denyUnix   bool
	privateIPC bool
	retired    chan struct{} // closed when a newer generation replaces this one, or on Close
	workers    sync.WaitGroup

	// mu guards the fields below. Workers are added only while the generation is not
	// retired, so workers.Wait never runs beside an Add and the ruleset is closed only after
	// the last thread restricted by it exists.
	mu      sync.Mutex
	done    bool
	started bool      // the spare workers were made
	idle    []*worker // workers waiting for a job, none of them held
	spawned int       // workers made, for tests
}

// worker is one restricted thread's goroutine; it takes jobs on a channel of its own, so a
// worker that is held (see [Sandbox.Hold]) is never handed a job.
//
// The channel holds one job. A worker is listed idle before it is back at the channel (it
// lists itself as it finishes a job, then loops; a spare one is listed while it still
// restricts its thread), and whoever takes it from the list must be able to give it the job
// at once: with an unbuffered channel a hand-over in that window failed, and a new thread
// was restricted instead (a few hundred microseconds, and a thread more for good). The slot
// is empty whenever the worker is listed idle: it is taken from the list once per job.
type worker struct{ jobs chan job }

// New builds the sandbox for p. Mode landlock on a kernel that cannot deliver it is an
// error wrapping [ErrUnsupported] that says why and how to choose; mode auto there gives an
// unenforced Sandbox whose Notes say so.
func New(mode Mode, p Policy, opts ...Option) (*Sandbox, error) {
	o := options{probe: KernelABI}
	for _, opt := range opts {
		opt(&o)
	}
	if mode == ModeNamespaces {
		mode = ModeAuto
	}
	s := &Sandbox{mode: mode, policy: p}
	if mode == ModeOff {
		s.reason = "sandbox = \"off\" in the configuration"
		return s, nil
	}
	s.abi = o.probe()
	if why := unsupported(s.abi); why != "" {
		if mode == ModeLandlock {
			return nil, fmt.Errorf("%w: sandbox = \"landlock\" is configured but %s; set sandbox = \"auto\" to run without kernel enforcement (then only commands judged safe run without a person), or \"off\"", ErrUnsupported, why)
		}
		s.reason = why
		return s, nil
	}
	if p.Home == "" {
		p.Home, _ = os.UserHomeDir()
	}
	if p.SystemRead == nil {
		p.SystemRead = append(append([]string(nil), DefaultSystemRead...), toolchainDirs()...)
	}
	s.policy = p
	s.denyUnix = s.abi < 9
	// The filter is built per command (it names the thread the command starts from); this
	// build checks that it can be.
	if _, err := buildFilter(filterSpec{Network: p.Network, DenyUnix: s.denyUnix, PrivateIPC: p.PrivateIPC, PID: os.Getpid(), TID: unix.Gettid()}); err != nil {
		return nil, err
	}
	g, err := s.newGeneration()
	if err != nil {
		return nil, err
	}
	s.gen = g
	s.enforced = true
	return s, nil
}

// newGeneration plans the grants from the filesystem as it is now and builds their ruleset.
// The stamps are taken after the plan and before the ruleset is built.
func (s *Sandbox) newGeneration() (*generation, error) {
	l := plan(s.policy, newMemoView())
	writable := append([]string(nil), s.policy.WriteRoots...)
	if s.policy.TempDir != "" {
		writable = append(writable, s.policy.TempDir)
	}
	stamps := stampsOf(stampDirs(l, writable))
	fd, err := buildRuleset(l.Grants, s.policy.Network)
	if err != nil {
		closeStamps(stamps)
		return nil, fmt.Errorf("sandbox: landlock ruleset: %w", err)
	}
	now := time.Now()
	return &generation{owner: s, fd: fd, layout: l, stamps: stamps, lastFull: now, made: now, network: s.policy.Network,
		denyUnix: s.denyUnix, privateIPC: s.policy.PrivateIPC, retired: make(chan struct{})}, nil
}

// current returns the generation commands start in now, making a new one when a stamped
// directory changed. An error making it is returned: nothing runs on stale grants' behalf
// with weaker rules, and nothing runs unrestricted.
func (s *Sandbox) current() (*generation, error) { return s.currentOr(true) }

// currentOr is current; without rebuild, a changed stamp gives nil and no error rather
// than a new generation (planning one walks the filesystem).
func (s *Sandbox) currentOr(rebuild bool) (*generation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("sandbox: closed")
	}
	g := s.gen
	switch stampsChanged(g.stamps, &g.lastFull, time.Now()) {
	case stampSame:
		return g, nil
	case stampGrown:
		if !g.refreshing {
			g.refreshing = true
			go s.refresh(g)
		}
		return g, nil
	}
	if !rebuild {
		return nil, nil
	}
	ng, err := s.newGeneration()
	if err != nil {
		return nil, err
	}
	s.gen = ng
	g.retire()
	return ng, nil
}

// refresh plans a new generation in place of g off every command's path, for entries made
// in a split directory outside the write roots (stampGrown): commands go on under g, which
// grants less, until the new one is made, with its spare workers, which then restrict their
// threads. It starts no sooner than refreshEvery after g was made, so that a directory the
// host changes all the time costs a plan a tenth of a second at most. Nothing is replaced
// when g was replaced meanwhile; a failure leaves g, and the next change tries again.
func (s *Sandbox) refresh(g *generation) {
	if wait := time.Until(g.made.Add(refreshEvery)); wait > 0 {
		select {
		case <-time.After(wait):
		case <-g.retired:
			return
		}
	}
	ng, err := s.newGeneration()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		g.refreshing = false
		return
	case s.closed || s.gen != g:
		ng.retire()
		return
	}
	s.gen = ng
	g.retire()
	ng.mu.Lock()
	ng.startLocked()
	ng.mu.Unlock()
}

// retire ends the generation's waiting threads and, once the last is gone, its ruleset. The
// sandbox's lock is held: nothing looks at g's stamps after.
func (g *generation) retire() {
	closeStamps(g.stamps)
	g.mu.Lock()
	g.done = true
	g.idle = nil
	close(g.retired)
	g.mu.Unlock()
	go func() {
		g.workers.Wait()
		_ = syscall.Close(g.fd)
	}()
}

// Unsupported says why a kernel of Landlock ABI abi cannot carry the sandbox, "" when it
// can.
func Unsupported(abi int) string { return unsupported(abi) }

func unsupported(abi int) string {
	switch {
	case runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64":
		return "the seccomp filter is only built for amd64 and arm64, not " + runtime.GOARCH
	case abi <= 0:
		return "this kernel has no Landlock (not built in, or not in the lsm= boot list)"
	case abi < RequiredABI:
		return fmt.Sprintf("this kernel has Landlock ABI %d; the sandbox needs ABI %d (Linux 6.12) for signal and socket scoping", abi, RequiredABI)
	}
	return ""
}

// toolchainDirs are the Go toolchain's directories when they lie outside the system ones.
func toolchainDirs() []string {
	var out []string
	if root := runtime.GOROOT(); root != "" {
		out = append(out, root)
	}
	if g, err := exec.LookPath("go"); err == nil {
		if r, err := filepath.EvalSymlinks(g); err == nil {
			out = append(out, filepath.Dir(filepath.Dir(r)))
		}
	}
	return out
}

// buildRuleset creates the Landlock ruleset: the grants, the TCP ports, and both scopes.
// Rights newer than the kernel's ABI are left out (go-landlock's best effort); New has
// checked that the ABI carries everything the sandbox promises.
func buildRuleset(grants []grant, n Network) (int, error) {
	cfg := landlock.V11.BestEffort()
	if n.Unrestricted {
		cfg.HandledAccessNet = 0
	}
	var rules []landlock.Rule
	// A path that vanished since the plan was made is left out: not granting is safe.
	for _, g := range grants {
		switch {
		case g.ListOnly:
			rules = append(rules, landlock.PathAccess(ll.AccessFSReadDir, g.Path).IgnoreIfMissing())
		case g.Dir && g.Write:
			rules = append(rules, landlock.RWDirs(g.Path).WithRefer().IgnoreIfMissing())
		case g.Dir:
			rules = append(rules, landlock.RODirs(g.Path).IgnoreIfMissing())
		case g.Write && strings.HasPrefix(g.Path, "/dev/"):
			rules = append(rules, landlock.RWFiles(g.Path).WithIoctlDev().IgnoreIfMissing())
		case g.Write:
			rules = append(rules, landlock.RWFiles(g.Path).IgnoreIfMissing())
		default:
			rules = append(rules, landlock.ROFiles(g.Path).IgnoreIfMissing())
		}
	}
	if !n.Unrestricted {
		for _, p := range n.ConnectTCP {
			rules = append(rules, landlock.ConnectTCP(p))
		}
		for _, p := range n.BindTCP {
			rules = append(rules, landlock.BindTCP(p))
		}
	}
	fd, _, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return -1, err
	}
	if fd < 0 {
		return -1, errors.New("the kernel accepted no restriction at all")
	}
	return fd, nil
}

// Enforced reports whether commands run under the kernel's restrictions.
func (s *Sandbox) Enforced() bool { return s != nil && s.enforced }

// ABI is the kernel's Landlock ABI version as probed (0 when not probed or missing).
func (s *Sandbox) ABI() int { return s.abi }

// Mode is the configured mode.
func (s *Sandbox) Mode() Mode { return s.mode }

// Close ends the waiting threads and, once the last one is gone, releases the ruleset.
// Commands already started are not affected.
func (s *Sandbox) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.gen != nil {
		s.gen.retire()
	}
	return nil
}

// Do runs fn on an OS thread restricted by the sandbox; processes fn starts inherit the
// restrictions. Unenforced, fn runs as it is. An error applying the restrictions is returned
// without running fn: nothing runs weaker.
//
// Restricting a thread costs a few hundred microseconds here (the seccomp filter is compiled
// per thread, capabilities are dropped one by one), so restricted threads are kept: each
// worker goroutine is locked to its thread for good (the runtime never gives that thread to
// another goroutine, and ends it when the worker returns) and runs one job after another. A
// call pays the hand-over to the worker and back.
func (s *Sandbox) Do(fn func() error) error {
	release, err := s.Hold(fn)
	if release != nil {
		release()
	}
	return err
}

// Hold is Do for a function that starts a process and returns while it runs: the worker
// that ran fn takes no other job until release is called, once that process (and whatever
// it started) has ended. Commands that run at the same time are therefore always started
// from different workers, so they are in different Landlock domains and cannot signal or
// ptrace one another; commands that follow each other on one worker share its domain (what
// one leaves running is killed when it ends, by procgroup). The caller waits for its process
// on its own goroutine, not on the restricted thread, which is then handed over only once
// each way. release is nil when err is not; calling it twice is a no-op.
func (s *Sandbox) Hold(fn func() error) (release func(), err error) {
	if !s.Enforced() {
		return func() {}, fn()
	}
	j := job{fn: fn, done: make(chan result, 1)}
	for {
		g, err := s.current()
		if err != nil {
			return nil, err
		}
		w := g.take()
		if w == nil {
			continue // retired since current returned: the next call gives the new one
		}
		select {
		case w.jobs <- j:
		case <-g.retired:
			// Replaced (or closed) while the worker was starting: start again in the
			// current generation.
			continue
		}
		r := <-j.done
		if !r.ran {
			return nil, r.err // the worker could not restrict its thread and has ended
		}
		var once sync.Once
		return func() { once.Do(func() { g.put(w) }) }, r.err
	}
}

// Go is Do for a caller that does not wait for fn: it returns as soon as a restricted worker
// has taken fn, and that worker takes no other job until fn has returned. A caller that
// starts a command in fn and waits for it there, then answers for it, hands the command to
// another thread once rather than twice (there and back), and the thread that waits for the
// command is the one its exit wakes. fn gets nil on the restricted thread; when the thread
// could not be restricted, fn is called with why on a goroutine of its own instead, and must
// start nothing. Unenforced, fn runs on a new goroutine with nil.
//
// Go takes only an idle worker, so that it never makes one (a few hundred microseconds), nor
// waits for a new generation to be planned when a stamp changed: then it reports false and
// does nothing, and the caller takes Do's road. (A spare worker still restricting its thread
// when Warm made it is idle: fn runs once it is done, sooner than a new one would be.) An error
// making the current generation is returned, and fn is not called.
func (s *Sandbox) Go(fn func(restricted error)) (bool, error) {
	if !s.Enforced() {
		go fn(nil)
		return true, nil
	}
	g, err := s.currentOr(false)
	if err != nil || g == nil {
		return false, err
	}
	return g.giveIdle(job{lent: func(_ *Worker, restricted error) { fn(restricted) }}), nil
}

// Worker is the restricted thread a function given to [Sandbox.Lend] runs on.
type Worker struct {
	s *Sandbox
	g *generation
}

// Current reports whether the worker's ruleset is still the sandbox's current one. A
// function that waited on its worker (for a request to come) asks before it starts a command
// there: a stamp may have changed meanwhile, and a command started from an older
// generation's thread would get that generation's rules. It costs what [Sandbox.Go] does
// before it takes a worker: a stat of each stamped directory.
func (w *Worker) Current() bool {
	g, err := w.s.currentOr(false)
	return err == nil && g == w.g
}

// Lend runs fn on a restricted worker that nothing else holds until fn returns, and returns
// without waiting for it: one waiting for a job if there is one, else a new one, which
// restricts its thread first (a few hundred microseconds, which the caller does not wait
// for). fn gets its Worker, or, when the thread could not be restricted, nil and why, on a
// goroutine of its own, and must then start nothing. Unenforced, fn runs on a new goroutine
// with nil and nil. Lend fails only when the sandbox is closed; fn is then not called.
//
// When a stamp changed, the new generation is planned (a walk of the filesystem and a new
// ruleset) on a goroutine of its own, never on the caller's thread, which may be a
// restricted one; fn then runs once it is made, or gets nil and the error making it.
//
// It is for a function that waits on its thread before it knows what to run (the helper's
// reader of requests, reader.go in backend/helper): the command it then starts from there
// needs no hand-over to another thread. A hand-over to a goroutine locked to its thread costs
// the Go runtime a wake-up of that thread and the passing of a processor to it, tens of
// microseconds, several times a hand-over between two goroutines.
func (s *Sandbox) Lend(fn func(w *Worker, restricted error)) error {
	if !s.Enforced() {
		go fn(nil, nil)
		return nil
	}
	g, err := s.currentOr(false)
	if err != nil {
		return err
	}
	if g == nil || !g.lend(job{lent: fn}) {
		go s.lendFresh(fn)
	}
	return nil
}

// lendFresh is Lend's road through a new generation.
func (s *Sandbox) lendFresh(fn func(w *Worker, restricted error)) {
	for {
		g, err := s.current()
		if err != nil {
			fn(nil, err)
			return
		}
		if g.lend(job{lent: fn}) {
			return
		}
	}
}

// Lend is [Sandbox.Lend] to a worker of w's generation, without looking at the stamps: for
// a function that asks Current itself before it starts anything (the helper's reader does),
// so that lending costs no stat. A retired generation lends through the sandbox.
func (w *Worker) Lend(fn func(w *Worker, restricted error)) error {
	if w.g.lend(job{lent: fn}) {
		return nil
	}
	return w.s.Lend(fn)
}

// lend gives j to a worker of g waiting for a job, or to a new one; false once g is retired.
func (g *generation) lend(j job) bool {
	return g.giveIdle(j) || g.spawnWith(j)
}

// giveIdle gives j to an idle worker of g; false when none is. A worker listed idle that is
// not yet back at its channel (finishing its last job, or a spare still restricting its
// thread) takes j from its slot when it gets there.
func (g *generation) giveIdle(j job) bool {
	w := g.takeIdle()
	if w == nil {
		return false
	}
	select {
	case w.jobs <- j:
		return true
	default: // its slot is full: not idle after all (a bug); leave it out of the list
		return false
	}
}

// Warm makes the current generation's spare workers now rather than for the first command:
// the helper calls it once it has said hello, so that their threads restrict themselves
// (a few hundred microseconds each) while its client gets ready, and the first command finds
// one waiting. It does not wait for them.
func (s *Sandbox) Warm() {
	if !s.Enforced() {
		return
	}
	g, err := s.currentOr(false)
	if err != nil || g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.startLocked()
	}
}

// takeIdle returns an idle worker, or nil when none is (or the generation is retired).
func (g *generation) takeIdle() *worker {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done || !g.started {
		return nil
	}
	if n := len(g.idle); n > 0 {
		w := g.idle[n-1]
		g.idle = g.idle[:n-1]
		return w
	}
	return nil
}

// take returns an idle worker, or a new one (kept afterwards like the others) when every
// worker is busy or held; nil once the generation is retired.
func (g *generation) take() *worker {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return nil
	}
	g.startLocked()
	if n := len(g.idle); n > 0 {
		w := g.idle[n-1]
		g.idle = g.idle[:n-1]
		return w
	}
	return g.spawnLocked(nil)
}

// startLocked makes the generation's spare workers, once; g.mu is held and g is not retired.
func (g *generation) startLocked() {
	if g.started {
		return
	}
	g.started = true
	for i := 0; i < spareThreads; i++ {
		g.idle = append(g.idle, g.spawnLocked(nil))
	}
}

// put gives a worker back once its job is over; a retired generation's workers end instead.
func (g *generation) put(w *worker) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.idle = append(g.idle, w)
	}
}

// spawnLocked starts a worker of this generation, with first as its first job when not nil;
// g.mu is held and g is not retired.
func (g *generation) spawnLocked(first *job) *worker {
	w := &worker{jobs: make(chan job, 1)}
	g.spawned++
	g.workers.Add(1)
	go g.worker(w, first)
	return w
}

// spawnWith starts a worker of this generation whose first job is j, held for it (not idle);
// false when the generation is retired.
func (g *generation) spawnWith(j job) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return false
	}
	g.started = true // its spare workers are not needed: this one is being made
	g.spawnLocked(&j)
	return true
}

// refreshEvery is the least time between a generation and the one refresh makes after it.
const refreshEvery = 100 * time.Millisecond

// spareThreads is how many restricted threads are made before the first command.
const spareThreads = 2

// job is one call's function: fn with done for Do and Hold, which wait for its result; lent
// for Go and Lend, which do not.
type job struct {
	fn   func() error
	done chan result
	lent func(w *Worker, restricted error)
}

// result is a job's outcome; ran is false when the worker could not restrict its thread
// and fn did not run.
type result struct {
	err error
	ran bool
}

// worker restricts a thread of its own and runs jobs on it until its generation is
// retired. The goroutine never unlocks the thread: when it returns, the runtime ends the
// thread, so the restrictions reach no other goroutine. A worker whose restriction failed
// refuses its first job and ends.
//
// first, when not nil, is its first job, given at its start (see [Sandbox.Lend]).
func (g *generation) worker(w *worker, first *job) {
	runtime.LockOSThread()
	if unix.Gettid() == os.Getpid() {
		// This is the main thread, the thread-group leader that /proc/PID/... and signals
		// to the PID reach: it must never share a command's Landlock domain. While this
		// goroutine holds it, a new goroutine cannot run on it: that one becomes the worker.
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.worker(w, first)
		}()
		<-done
		runtime.UnlockOSThread()
		return
	}
	defer g.workers.Done()
	err := g.restrictThread()
	for {
		var j job
		if first != nil {
			j, first = *first, nil
		} else {
			select {
			case j = <-w.jobs:
			case <-g.retired:
				// A job given before the retirement is still run: its giver
				// does not wait for a refusal. A lent function asks Current,
				// and a held one was handed over before the rules changed.
				select {
				case j = <-w.jobs:
				default:
					return
				}
			}
		}
		if !g.run(w, j, err) {
			return
		}
	}
}

// run runs one job on worker w, whose thread's restriction failed with err when err is not
// nil (the job is then refused, or handed to a goroutine of its own, and the worker ends); it
// reports whether the worker goes on.
func (g *generation) run(w *worker, j job, err error) bool {
	switch {
	case err != nil && j.lent != nil:
		go j.lent(nil, err)
		return false
	case err != nil:
		j.done <- result{err: err}
		return false
	case j.lent != nil:
		// Not recovered as Do's are: a panic ends the process, as it would on a goroutine
		// of its own, rather than leave what fn was doing half done.
		j.lent(&Worker{s: g.owner, g: g}, nil)
		g.put(w)
		if f := g.owner.afterPut; f != nil {
			f()
		}
	default:
		j.done <- result{err: runJob(j.fn), ran: true}
	}
	return true
}

func runJob(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sandbox: panic in sandboxed call: %v", r)
		}
	}()
	return fn()
}

func (g *generation) restrictThread() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if err := dropCaps(); err != nil {
		return err
	}
	if err := ll.LandlockRestrictSelf(g.fd, 0); err != nil {
		return fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
	}
	filter, err := buildFilter(filterSpec{Network: g.network, DenyUnix: g.denyUnix, PrivateIPC: g.privateIPC, PID: os.Getpid(), TID: unix.Gettid()})
	if err != nil {
		return err
	}
	return installFilter(filter)
}

// Notes say, in a line each, what is and is not enforced.
func (s *Sandbox) Notes() []string {
	if !s.Enforced() {
		return []string{"sandbox: not enforced (" + s.reason + "): commands can reach every file, process and network the user can; only commands judged safe run without a person"}
	}
	p := s.policy
	l := s.currentLayout()
	var w []string
	w = append(w, p.WriteRoots...)
	if p.TempDir != "" {
		w = append(w, p.TempDir+" (session temp)")
	}
	net := "no internet sockets"
	switch {
	case p.Network.Unrestricted:
		net = "network not restricted"
	case len(p.Network.ConnectTCP)+len(p.Network.BindTCP) > 0:
		net = fmt.Sprintf("TCP connect only to ports %v, bind only %v; no UDP or raw sockets", p.Network.ConnectTCP, p.Network.BindTCP)
	}
	notes := []string{
		fmt.Sprintf("sandbox: enforced by Landlock ABI %d and seccomp: writes only in %s; reads only in the read roots, system and toolchain directories", s.abi, strings.Join(w, ", ")),
		fmt.Sprintf("sandbox: never readable: the configuration, the ledger, credential directories and %d protected paths found at start", len(l.Protected)),
		"sandbox: " + net + "; no signals, ptrace or /proc environ reads of processes outside the command; no mount, keyring, bpf, perf, module or namespace calls",
	}
	if s.denyUnix {
		notes = append(notes, fmt.Sprintf("sandbox: unix sockets refused (Landlock ABI %d cannot restrict pathname sockets; ABI 9 can)", s.abi))
	}
	if len(l.Split) > 0 {
		notes = append(notes, "sandbox: commands cannot make new entries directly in "+strings.Join(l.Split, ", ")+" (each holds a protected path); entries others make there are granted, or kept out when protected, from the next command on in a write root, and within a tenth of a second elsewhere")
	}
	notes = append(notes, secondWallNotes(p)...)
	notes = append(notes, l.Notes...)
	return notes
}

// HidesDenyNames reports whether commands cannot read the deny_names files under the roots
// (every match the scan found is protected: it was given a deny_names matcher and did not
// stop at its limit), nor Airlock's files and the credential stores.
func (s *Sandbox) HidesDenyNames() bool {
	return s.Enforced() && s.policy.Hidden != nil && !s.currentLayout().ScanCut
}

// Protected lists the existing paths the sandbox keeps out, resolved.
func (s *Sandbox) Protected() []string { return append([]string(nil), s.currentLayout().Protected...) }

// currentLayout is the plan of the generation commands start in now.
func (s *Sandbox) currentLayout() layout {
	if s == nil {
		return layout{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == nil {
		return layout{}
	}
	return s.gen.layout
}
