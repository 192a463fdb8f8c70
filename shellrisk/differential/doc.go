// Package differential checks the shell-risk classifier against the shells and programs
// that really run commands, in two passes, each in a throwaway container (no network,
// every capability dropped, read-only root, no-new-privileges) where every command runs
// as a throwaway user of its own with its own scratch directory.
//
// The programs pass (TestDifferential): bash, bash as sh, dash and busybox sh are real and
// every program on PATH — and at /bin, /usr/bin and the other system directories — is a
// recorder that logs its argv and exits 0. Each command runs under each shell; the
// programs the shell executed, with their exact arguments, must all be among the simple
// commands the classifier judged. A program the shell ran that the classifier never saw
// is how a command gets lexed around the classifier, and the test fails on it.
//
// The file-effects pass (TestFileEffects): the programs are real (the host's /usr,
// mounted read-only), each run starts from a fresh scratch tree, and the driver records
// what the run created, wrote, truncated, renamed, removed, linked, changed the mode of or
// opened for writing. A safe verdict with any effect, or a workspace-write verdict with
// an effect outside the workspace, fails — except for the seeds listed in
// testdata/known_misreads.txt, each of which must still misread, so the list only shrinks.
// Its seeds are the misread families of issue 20 and one per output-file option of the
// programs agents use, read from their own help (options_test.go, package getopt, which
// also holds the option-spelling check).
//
// The package has only tests; the probe subpackage is the recorder and driver that runs
// inside the containers.
package differential
