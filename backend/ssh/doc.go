// Package ssh runs commands on a remote host over SSH, for agents that work on servers.
//
// An [Env] holds one verified connection (golang.org/x/crypto/ssh) and shares it between all
// calls. Host keys are checked against an OpenSSH known_hosts file and an unknown or changed
// key is refused with a [*HostKeyError] that carries the offered fingerprint; there is no
// setting that accepts any key. The connection is kept alive with keepalive@openssh.com
// requests; when it drops, the next call reconnects with backoff and says so in
// [backend.Result.Notes], and a call in flight when it dropped ends with an error wrapping
// [backend.ErrUnavailable] rather than hanging.
//
// Commands are started one of two ways, reported by [Env.Describe] as its Mode:
//
//   - "helper": the same static `airlock helper` the Docker backend uses is uploaded once
//     to a per-user cache path named by its SHA-256 (~/.cache/airlock/helper-<sha256>) and
//     started on one long-lived session; calls are multiplexed over it (~1 ms). The script that
//     starts it checks, right before the exec, that $HOME, ~/.cache and ~/.cache/airlock (made
//     0700) belong to the user and are closed to group and others, and that the helper is a
//     regular file of the user's with the expected SHA-256; a cache it cannot trust leaves the
//     backend in session mode, with the reason in [Env.Describe]'s notes.
//   - "session": one SSH session per command (~3 ms on a kept connection). sshd hands every
//     command to the user's login shell, so the string it gets is minimal: `exec /bin/sh -c
//     '…'`, with the user's profile read only when login_shell is set.
//
// In both modes nothing from the Airlock host's environment reaches the remote command: it
// runs under `env -i` with PATH, HOME, USER and LOGNAME of the remote account plus the
// request's own variables (secret-looking names dropped, see [backend.EnvPolicy]). The working
// directory is resolved remotely with `cd -P` and refused if its real path leaves the
// workspace. Each command runs in a process group of its own on the remote host; a timeout or
// cancel signals that group (TERM, kill_grace, then KILL) through a second session, and what
// the command leaves behind in its group is killed when it exits.
//
// A remote host gives no isolation of its own: commands see its whole filesystem and network
// as the configured user.
package ssh
