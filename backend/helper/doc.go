// Package helper is Airlock's resident helper: one long-lived process inside a container (or on
// an SSH host) that starts commands on request, so that a command costs a message on an
// already open stream (~1 ms) rather than a fresh docker exec or SSH session (~45 ms).
//
// [Serve] is the helper's side; `airlock helper` runs it on its stdin and stdout. [Client] is
// the host's side: it multiplexes concurrent [Client.Exec] calls over one stream pair.
//
// The wire format is a sequence of frames, each a 4-byte big-endian length (of what follows),
// a 1-byte type, a 4-byte request ID and a payload. The messages every command and every file
// operation carries (start, exit, file request and answer) are in a small binary form of their
// own (msgcodec.go), the rest of the control messages (hello, owner, tunnel) JSON; stdin,
// output and file data are raw bytes. Both sides open with a hello carrying
// [ProtocolVersion] and refuse a peer that speaks another. A start whose environment is the
// previous start's carries none and says so (same_env): a backend sends one environment for
// a whole session, and each side would otherwise encode and decode it for every command.
//
// The helper applies the rules a backend must apply where the command runs, not on the host:
// each command gets its own process group, a timeout or cancel kills the whole group (TERM, a
// grace period, KILL), processes left in the group when the leader exits are killed, and each
// output stream is capped with [backend.CappedBuffer] while it is produced, so a command that
// prints gigabytes costs the helper the cap and sends the host no more than that. Stdin is
// flow-controlled with per-request credit, so a command that never reads its input cannot
// stall the other commands sharing the stream.
//
// The helper is handed a complete environment for each command and reads no configuration of
// its own: it never sees the host's variables or secrets.
//
// Where a command's only network is its own loopback (a Docker container in [network] mode
// "allowlist"), a request may name a unix socket ([Request.EgressSocket]): the helper then
// gives the command a relay port on 127.0.0.1 and its proxy variables, and carries each
// connection to that socket, where Airlock's egress proxy answers for the command's call.
// Where the sandbox shares no socket with Airlock's host either (a Kubernetes pod whose
// NetworkPolicy denies all egress), a request may ask for tunnels instead
// ([Request.EgressTunnel]): the same relay port, each connection carried back over the
// helper's own stream with flow control per connection, and accepted on the host's side
// from a listener the backend hands to the egress proxy as the call's.
package helper
