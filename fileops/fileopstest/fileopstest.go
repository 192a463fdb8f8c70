// Package fileopstest is the conformance suite for the file tools: every backend runs it
// against its real environment, so that read_file, write_file, patch and search_files, and
// the path policy in front of them, behave the same on the host, in a container and over
// SSH.
//
// A backend's test calls [Run] with a constructor. Each case gets a fresh environment and a
// scratch directory inside its workspace that holds the policy's only root (ws), and beside
// it a directory the policy must never let a call reach (outside) and one with a similar
// name (ws-copy). Every case checks, when it ends, that nothing beside the root was created,
// changed or removed and that no byte of it reached the model. The suite needs nothing from
// a backend beyond [backend.Environment]: fixtures are made with POSIX sh and busybox
// utilities through Exec.
package fileopstest

import (
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

// Run runs every case against environments made by newEnv. newEnv registers its own
// cleanup with t.Cleanup.
func Run(t *testing.T, newEnv func(t *testing.T) backend.Environment) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"RelativeAndAbsolute", testRelativeAbsolute},
		{"DotDot", testDotDot},
		{"SimilarPrefix", testSimilarPrefix},
		{"SymlinkFileOutside", testSymlinkFileOutside},
		{"SymlinkDirOutside", testSymlinkDirOutside},
		{"DanglingSymlink", testDanglingSymlink},
		{"SymlinkLoop", testSymlinkLoop},
		{"SymlinkedParentInside", testSymlinkedParent},
		{"SymlinkInsideWrite", testSymlinkInsideWrite},
		{"HardLink", testHardLink},
		{"HardLinkAfterCheck", testHardLinkAfterCheck},
		{"ReadSwapRace", testReadSwapRace},
		{"DotEnvAnyDepth", testDotEnv},
		{"ProtectedFile", testProtected},
		{"WindowsSeparators", testWindowsSeparators},
		{"NULByte", testNUL},
		{"Unicode", testUnicode},
		{"MissingFile", testMissing},
		{"ReadWindow", testReadWindow},
		{"OverSizeRead", testOverSizeRead},
		{"OverSizeWrite", testOverSizeWrite},
		{"WriteCreatesAndKeepsMode", testWriteMode},
		{"AtomicWrite", testAtomicWrite},
		{"PatchMatches", testPatch},
		{"Preview", testPreview},
		{"BinaryRead", testBinary},
		{"SearchFlagLikePatterns", testSearchFlags},
		{"SearchFilesAndHidden", testSearchFiles},
		{"SwapAfterCheck", testSwapAfterCheck},
		{"LinkedRoot", testLinkedRoot},
		{"DotDotAfterMissingDir", testDotDotAfterMissing},
		{"LongAndDeepPaths", testLongPaths},
		{"GitConfig", testGitConfig},
		{"PermissionDenied", testPermissionDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			tc.fn(t, newHarness(t, env))
		})
	}
}
