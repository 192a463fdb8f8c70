//go:build linux && cgo

package helper

// The resident helper's first steps, made in C before the Go runtime starts: a constructor
// runs while the process has its one thread, so what it sets on that thread every thread the
// runtime makes later copies. It empties the bounding set, clears the ambient set and sets
// no_new_privs — the steps of sandbox.DropAll that need no capability the helper still uses
// (building the namespace's mounts needs the permitted and effective sets, which DropAll
// clears later) — so that DropAll, seeing them done on every thread, broadcasts only the
// capset instead of some 40 psx calls. Without cgo DropAll makes every step itself.
//
// A failure here is not reported: an unprivileged helper may not drop from its bounding set,
// and DropAll then makes the steps itself and fails as it would have, and
// sandbox.VerifyDropped checks every thread before the helper serves.

/*
#include <string.h>
#include <sys/prctl.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

// Must equal arg0Setup (TestEarlyArg0).
static const char *airlock_helper_arg0(void) { return "airlock-helper"; }

__attribute__((constructor)) static void airlock_helper_early(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 1 || argv == NULL || argv[0] == NULL || strcmp(argv[0], airlock_helper_arg0()) != 0) {
		return;
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	// Capabilities are numbered without gaps; the first the kernel does not know fails
	// with EINVAL, and without CAP_SETPCAP the first fails with EPERM.
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
			break;
		}
	}
}
*/
import "C"

// earlyArg0 is the argv[0] the constructor acts on.
func earlyArg0() string { return C.GoString(C.airlock_helper_arg0()) }
