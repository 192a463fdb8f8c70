// Package proctest finds, from the host, a process that a command recorded from inside
// Airlock's sandbox. On the local backend commands run in the resident helper's PID
// namespace, so the `$!` or `$$` a command writes down is a PID of that namespace, not of
// the host: a test that looked it up in the host's /proc would look at an unrelated
// process (a kernel thread, as the first CI run after the helper landed showed). A command
// therefore records its PID together with its PID namespace, spelled [Record], and the
// test asks [Alive].
package proctest
