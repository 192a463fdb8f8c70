// Package integration tests Airlock as its users meet it: the airlock binary, built once
// per test run, driven through its CLI against real backends — local processes, a Docker
// Engine started by .ci/test, an sshd the tests start themselves.
//
// Tests that need a daemon skip when it is unreachable, unless AIRLOCK_REQUIRE_DOCKER=1
// (or AIRLOCK_REQUIRE_SSH=1) turns the skip into a failure, as CI does.
package integration
