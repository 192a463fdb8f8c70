package receipt

import (
	"errors"
	"fmt"
	"time"
)

// Group commit. Every call waits for its dispatched line to be durable, and an fsync costs
// far more than encoding a line, so when many sessions append at once the ledger would spend
// its time in one fsync after another. Instead, appends queue, and one committer at a time
// (the append that found none running, then a goroutine while lines keep coming) takes
// everything queued, encodes it in order, chained, and commits it with one write and one
// fsync; the appends that arrive meanwhile form the next group, which it takes as soon as
// that fsync returns. Each caller returns only once its own line is durable, and with the
// error its line met when it is not:
//
//   - the file lock, the tail reload and a continued file (continue.go) are done once for the
//     group, and an error there is every waiting caller's error;
//   - a dispatched line still needs a whole reserve; when it cannot be made whole, the
//     dispatched lines of the group are refused with a *SpaceError and the others go on;
//   - a write or sync that fails cuts the file back to the last durable line (nothing of
//     the group stays) and every caller in the group gets the error: after a failed fsync no
//     line of the group is known to be on disk, and trying the fsync again could report
//     success for data the kernel already dropped;
//   - a full disk is the exception: the group's lines are then written one at a time by the
//     rules of reserve.go, so that a completed line may spend the reserve while a dispatched
//     one is refused, exactly as when each came alone.

// pendingLine is one caller's line waiting for a group commit.
type pendingLine struct {
	ln  Line
	err error // final once done is closed
	// done is closed once the group that holds the line was committed (or failed); every
	// line queued for the same group shares it.
	done chan struct{}
}

// WithoutGroupCommit makes every Append take the ledger's lock, write and fsync its own line
// alone. It exists to measure group commit against the one-at-a-time alternative.
func WithoutGroupCommit() Option {
	return func(l *Ledger) error {
		l.oneAtATime = true
		return nil
	}
}

// appendGrouped queues ln and waits until it is durable. An append that finds no committer
// running becomes it: it commits the queue itself, with no goroutine to wake (a lone caller
// pays one write and one fsync, as without group commit), and hands on to a committer
// goroutine when more lines were queued meanwhile.
func (l *Ledger) appendGrouped(ln Line) error {
	p, lead := l.enqueue(ln)
	if lead && l.commitQueued() {
		go l.flush()
	}
	<-p.done
	return p.err
}

// enqueue puts ln at the end of the queue for the next group commit; lead says no committer
// runs and the caller must start one. The committer takes everything queued at once and
// commits it with one write and one fsync; the appends that arrive meanwhile form the next
// group, which it takes as soon as that fsync returns.
func (l *Ledger) enqueue(ln Line) (p *pendingLine, lead bool) {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if l.queueDone == nil {
		l.queueDone = make(chan struct{})
	}
	p = &pendingLine{ln: ln, done: l.queueDone}
	l.queue = append(l.queue, p)
	lead = !l.flushing
	l.flushing = true
	return p, lead
}

// AppendAsync queues one event for r and returns at once, with a function that waits until
// that line is durable and returns the error it met. The line is committed with the next
// group; lines become durable in the order they were queued, so a later Append's line is
// never durable before this one. A caller that runs on without waiting (a completed line,
// while the next call of its batch is dispatched) must wait before it lets anyone see what
// the line records.
func (l *Ledger) AppendAsync(event string, r *Receipt) (wait func() error) {
	if l.oneAtATime {
		err := l.Append(event, r)
		return func() error { return err }
	}
	p, lead := l.enqueue(Line{Event: event, Receipt: r})
	if lead {
		go l.flush()
	}
	return func() error {
		<-p.done
		return p.err
	}
}

// flush is the committer goroutine: it commits group after group until it finds the queue
// empty.
func (l *Ledger) flush() {
	for l.commitQueued() {
	}
}

// commitQueued commits what is queued as one group, and reports whether more was queued
// meanwhile; when not, the committer's turn is over (flushing is cleared).
func (l *Ledger) commitQueued() (more bool) {
	l.qmu.Lock()
	group, done := l.queue, l.queueDone
	l.queue, l.queueDone = nil, nil
	l.qmu.Unlock()
	l.mu.Lock()
	l.commitGroup(group)
	l.mu.Unlock()
	close(done)
	l.qmu.Lock()
	defer l.qmu.Unlock()
	if len(l.queue) == 0 {
		l.flushing = false
		return false
	}
	return true
}

// commitGroup makes the lines of group durable in order and sets each one's error.
func (l *Ledger) commitGroup(group []*pendingLine) {
	if l.f == nil {
		setErr(group, ErrClosed)
		return
	}
	err := l.withLock(func() error {
		var dispatchErr error
		for _, p := range group {
			if p.ln.Event == EventDispatched {
				if err := l.ensureReserve(); err != nil {
					dispatchErr = err
				}
				break
			}
		}
		todo := group[:0:0]
		for _, p := range group {
			if dispatchErr != nil && p.ln.Event == EventDispatched {
				p.err = &SpaceError{Path: l.path, Event: p.ln.Event, Err: dispatchErr}
				continue
			}
			todo = append(todo, p)
		}
		if len(todo) == 0 {
			return nil
		}
		err := l.appendBatch(todo)
		if err == nil || !isNoSpace(err) {
			setErr(todo, err)
			return nil
		}
		// A full disk: each line by the reserve's rules, as if it came alone.
		for _, p := range todo {
			p.err = l.appendSpending(p.ln)
		}
		return nil
	})
	if err != nil {
		for _, p := range group {
			if p.err == nil {
				p.err = err
			}
		}
	}
}

func setErr(group []*pendingLine, err error) {
	for _, p := range group {
		p.err = err
	}
}

// appendBatch writes the lines of group, chained in order, with one write and one fsync. The
// chain's state moves on only once all of them are durable.
func (l *Ledger) appendBatch(group []*pendingLine) error {
	if len(group) == 1 {
		return l.appendLocked(group[0].ln)
	}
	seq, prev := l.seq, l.prev
	buf := l.batchBuf[:0]
	var lastLen int
	now := time.Now().UTC()
	for _, p := range group {
		ln := p.ln
		seq++
		ln.Seq, ln.Prev = seq, prev
		if ln.Time.IsZero() {
			ln.Time = now
		}
		n0 := len(buf)
		var hash string
		var err error
		if buf, hash, err = appendSealed(buf, ln); err != nil {
			return fmt.Errorf("ledger encode: %w", err)
		}
		buf = append(buf, '\n')
		prev, lastLen = hash, len(buf)-n0
	}
	if cap(buf) <= 1<<20 {
		l.batchBuf = buf
	}
	if _, err := l.writeLine(l.f, buf); err != nil {
		return errors.Join(fmt.Errorf("ledger write: %w", err), l.cutBack())
	}
	if err := l.syncFile(l.f); err != nil {
		return errors.Join(fmt.Errorf("ledger sync: %w", err), l.cutBack())
	}
	l.seq, l.prev = seq, prev
	l.size += int64(len(buf))
	l.lastLen = int64(lastLen)
	l.lastLine = append(l.lastLine[:0], buf[len(buf)-lastLen:]...)
	return nil
}
