// Package differential checks the shell-risk classifier against the shells that really run
// commands. Its tests start one throwaway container (no network, every capability dropped,
// read-only root) in which bash, bash as sh, dash and busybox sh are real and every program
// on PATH — and at /bin, /usr/bin and the other system directories — is a recorder that
// logs its argv and exits 0. Each command runs under each shell; the programs the shell
// executed, with their exact arguments, must all be among the simple commands the
// classifier judged. A program the shell ran that the classifier never saw is how a
// command gets lexed around the classifier, and the test fails on it.
//
// The package has only tests; the probe subpackage is the recorder and driver that runs
// inside the container.
package differential
