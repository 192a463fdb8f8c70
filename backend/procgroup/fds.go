package procgroup

import (
	"math"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A command gets its three standard streams and nothing else. Go opens every descriptor of
// its own close-on-exec, but the ones this process inherited open (a terminal, a jobserver
// pipe, a file its parent held) it keeps as they were, and a plain fork/exec would hand them
// to every command — a read of a file outside every root, or a write to the person's
// terminal, that no sandbox sees because the descriptor was opened before. So before each
// start, every descriptor above 2 is marked close-on-exec; the ones a command is meant to
// get are placed by os.StartProcess in the child, which clears the mark on them.

// markInheritedCloseOnExec marks every descriptor from 3 up close-on-exec: one close_range
// call (Linux 5.11), or a walk over /proc/self/fd before that.
func markInheritedCloseOnExec() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}

// devNull is /dev/null opened once for reading, the standard input of every command given
// none. os/exec would open it for each command and offer it to the network poller, which
// refuses a character device (an open, four fcntl calls, an epoll_ctl that fails with EPERM
// and a close on every start); a descriptor of our own, close-on-exec, is placed by
// os.StartProcess in the child as it is, and never closed by it.
var devNull = sync.OnceValues(func() (*os.File, error) {
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), os.DevNull), nil
})
