//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Commands hold no capabilities, even when Airlock runs as root. With CAP_FOWNER, CAP_CHOWN,
// CAP_DAC_OVERRIDE and CAP_SETFCAP a root command could change the mode, owner, times,
// extended attributes and file capabilities of any file outside every root — Landlock
// governs reading, writing and creating files, not their metadata. Without them only the
// owner of a file may change its metadata, and a root command's write to a file it does not
// own follows the file's mode bits like anyone's. What remains is the owner's own files:
// a command can still chmod a file of the user's (of root's, when Airlock runs as root)
// outside the roots; the namespace sandbox's read-only mounts close that.

// Secure bits (linux/securebits.h), which golang.org/x/sys/unix does not name: uid 0 gets no
// capabilities from exec, and nothing may raise ambient capabilities again; each locked.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
	lockedSecureBits              = secbitNoRoot | secbitNoRootLocked | secbitKeepCapsLocked |
		secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
)

// lastCap is the highest capability this kernel knows (/proc/sys/kernel/cap_last_cap), at
// least the highest golang.org/x/sys/unix names; read once. Read for each capability
// dropped, as it was, it cost four system calls a capability: 1.2 ms of the 1.45 ms a new
// restricted thread took to restrict itself here.
var lastCap = sync.OnceValue(readLastCap)

func readLastCap() uintptr {
	last := uintptr(unix.CAP_LAST_CAP)
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && uintptr(n) > last && n < 64 {
			last = uintptr(n)
		}
	}
	return last
}

// dropCaps empties the calling thread's bounding, ambient, inheritable, permitted and
// effective sets and locks the secure bits above. Capabilities are per thread, so only what
// this thread starts is affected; no_new_privs (set before) keeps an exec of a setuid or
// file-capability program from granting any back.
func dropCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: capget: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 {
		// An unprivileged user holds none (and may not drop from the bounding set); with
		// no_new_privs an exec cannot grant any.
		return nil
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("sandbox: clear ambient capabilities: %w", err)
	}
	// The bounding set and the secure bits need CAP_SETPCAP, so they go before capset.
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		for c, last := uintptr(0), lastCap(); c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && err != unix.EINVAL {
				return fmt.Errorf("sandbox: drop capability %d from the bounding set: %w", c, err)
			}
		}
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecureBits, 0, 0, 0); err != nil {
			return fmt.Errorf("sandbox: secure bits: %w", err)
		}
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: capset: %w", err)
	}
	return nil
}
