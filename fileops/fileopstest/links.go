package fileopstest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/tool"
)

// testHardLink: a file with more than one name is refused for reads as for writes, whether
// its other name lies inside the root or outside, and search_files does not read it either.
func testHardLink(t *testing.T, h *harness) {
	h.sh("echo shared > ws/one.txt && ln ws/one.txt ws/two.txt && ln outside/secret.txt ws/alias.txt")
	// The outside file's link count goes back before the suite compares it.
	t.Cleanup(func() { h.sh("rm -f ws/alias.txt") })
	for _, name := range []string{"two.txt", "alias.txt"} {
		r := read(h, h.ws(name))
		h.wantDenied(r, pathpolicy.CodeForbiddenPath)
		if !strings.Contains(r.verdict.Message, "hard link") {
			t.Errorf("denial of %s does not say why: %q", name, r.verdict.Message)
		}
		h.wantDenied(write(h, h.ws(name), "x"), pathpolicy.CodeForbiddenPath)
		h.wantDenied(h.call(fileops.Patch, args{"path": h.ws(name), "old_string": "shared", "new_string": "x"}), pathpolicy.CodeForbiddenPath)
	}
	out := h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "CANARY|shared", "path": h.ws("")}))
	if m := data(t, out)["matches"].([]any); len(m) != 0 {
		t.Errorf("search read files with several names: %v", m)
	}
	if got := h.sh("cat ws/one.txt"); got != "shared\n" {
		t.Errorf("hard-linked file changed: %q", got)
	}
}

// testHardLinkAfterCheck replaces a checked file with a hard link to a file outside between
// policy and handler: the handler checks the link count of the file it opened.
func testHardLinkAfterCheck(t *testing.T, h *harness) {
	h.sh("echo victim > ws/victim.txt")
	a := args{"path": h.ws("victim.txt")}
	r := read(h, h.ws("victim.txt"))
	h.wantOK(r)
	pa := args{"path": h.ws("victim.txt"), "old_string": "victim", "new_string": "x"}
	rp := h.call(fileops.Patch, args{"path": h.ws("victim.txt"), "old_string": "victim", "new_string": "victim"})
	h.wantOK(rp)
	h.sh("ln -f outside/secret.txt ws/victim.txt")
	t.Cleanup(func() { h.sh("rm -f ws/victim.txt") })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		name string
		a    args
		r    result
	}{{fileops.ReadFile, a, r}, {fileops.Patch, pa, rp}} {
		tl, _ := h.reg.Lookup(c.name)
		out := h.handle(ctx, tl, mustJSON(t, c.a), c.r.verdict.Paths)
		if out.Status != tool.StatusFailed || out.ErrorCode != pathpolicy.CodeForbiddenPath {
			t.Errorf("%s of a file hard-linked after the check: status %q code %q (%s)", c.name, out.Status, out.ErrorCode, out.Content)
		}
	}
}

// swapReads is how many read_file calls race the swapper.
const swapReads = 300

// swapBurst is how many swaps the swapper makes between its pauses.
const swapBurst = 50

// testReadSwapRace runs, inside the environment, a process that swaps a file for a symbolic
// link to a file outside the root and back, as fast as it can, while read_file reads the
// file swapReads times. No read may return the outside file; some must return the file.
//
// The swapper works in bursts of swapBurst swaps at full speed, each followed by a short
// pause with the real file in place. Every read during a burst is raced as hard as before;
// the pauses are what let some reads return the file whatever the relative speed of the
// reader (under -race and load the reader is many times slower than the shell loop, and
// with no pause every read could land on a swap and be refused, which proves nothing).
func testReadSwapRace(t *testing.T, h *harness) {
	h.sh("echo inside > ws/f.txt")
	swapper := fmt.Sprintf(`cd %s/ws || exit 1
i=0
while [ ! -e .stop ] && [ $i -lt 1000000 ]; do
	ln -s ../outside/secret.txt l.tmp && mv -f l.tmp f.txt
	echo inside > f.tmp && mv -f f.tmp f.txt
	i=$((i + 1))
	[ $((i %% %d)) -eq 0 ] && { echo $i > .swaps; sleep 0.02; }
done
echo $i`, h.scratch, swapBurst)
	// The swapper lives as long as the reads take: in exec mode under load, 300 reads (a
	// docker exec or two each) can take longer than any few minutes, and a swapper ended by
	// its own timeout reports nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	type swapped struct {
		res backend.Result
		err error
	}
	done := make(chan swapped, 1)
	go func() {
		res, err := h.env.Exec(ctx, backend.Request{Command: swapper, Timeout: 15 * time.Minute})
		done <- swapped{res, err}
	}()
	stopped := false
	stop := func() swapped {
		if !stopped {
			stopped = true
			h.sh("touch ws/.stop")
		}
		return <-done
	}
	defer func() {
		if !stopped {
			stop()
		}
	}()
	// Let the swapper start before the first read.
	for i := 0; i < 100 && !h.exists("ws/l.tmp") && h.sh("[ -L ws/f.txt ] && echo y || true") == ""; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	inside, refused, leaked := 0, 0, 0
	why := map[string]int{}
	// At least swapReads reads, and on until the swapper has swapped ten times (reads by a
	// resident helper are fast enough to finish before a loaded machine gives it a turn).
	swapsSoFar := func() int {
		n, _ := strconv.Atoi(strings.TrimSpace(h.sh("cat ws/.swaps 2>/dev/null || echo 0")))
		return n
	}
	deadline := time.Now().Add(time.Minute)
	for n := 0; n < swapReads || (n%50 != 0 || swapsSoFar() < 10) && time.Now().Before(deadline); n++ {
		r := read(h, h.ws("f.txt"))
		switch {
		case r.denied():
			refused++
			why[r.verdict.Code]++
		case r.out.Status != tool.StatusOK:
			refused++
			why[r.out.ErrorCode]++
		case strings.Contains(r.out.Content, h.canary):
			leaked++
		case strings.Contains(r.out.Content, "inside"):
			inside++
		default:
			refused++
		}
	}
	sw := stop()
	if sw.err != nil {
		t.Fatalf("swapper: %v", sw.err)
	}
	swaps, _ := strconv.Atoi(strings.TrimSpace(string(sw.res.Stdout)))
	if sw.res.TimedOut {
		t.Errorf("the swapper ran out of time before the reads were done: %d swaps recorded", swapsSoFar())
	}
	reads := inside + refused + leaked
	t.Logf("%s: %d reads over %d swaps: %d returned the file, %d were refused %v, %d returned the file outside",
		h.env.Describe().Kind+"/"+h.env.Describe().Mode, reads, swaps, inside, refused, why, leaked)
	if leaked > 0 {
		t.Errorf("%d of %d reads returned the file outside the root", leaked, reads)
	}
	if swaps < 10 || inside == 0 {
		t.Errorf("the race did not run: %d swaps, %d reads of the file (stdout %q, stderr %q)", swaps, inside, sw.res.Stdout, sw.res.Stderr)
	}
}
