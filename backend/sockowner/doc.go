// Package sockowner tells which running command holds the client end of a TCP connection
// that arrived at one of Airlock's listeners — the egress proxy's — so that a refused
// request lands on the receipt of the call that made it.
//
// Why not a port per call: on the local backend (and under the SSH helper's kernel sandbox)
// commands may connect to one TCP port only, fixed when the Landlock ruleset is built; a port
// per call would mean a ruleset, and restricted threads, per call. Why not credentials in the
// proxy URL: Airlock never hands credentials to a command, and a command could send another
// call's anyway. The kernel already knows the answer: the accepted connection's peer address
// names a socket in /proc/net/tcp, that socket's inode is held open by a process, and that
// process descends from the leader of the command's process group.
//
// A [Table] maps the leaders of running commands to the calls they run for. [Table.Owner]
// reads the socket table once, then looks only at the commands' own processes: each leader
// and its descendants (the children files under /proc/PID/task), plus the orphans this
// process was handed as a subreaper that still carry a leader's process group. A socket held
// by processes of two calls, or by none, is not attributed: the error says why, and the
// caller records the refusal for the session as unattributed — never for a guessed call.
//
// Nothing is paid per call but a map entry; the lookup runs only for a connection the caller
// asks about (a refusal), while the command still waits for its answer and so still holds
// the socket.
package sockowner
