// Package fileops gives agents four file tools — read_file, write_file, patch and
// search_files — written once over [backend.Environment] so that they behave the same on the
// host, in a container and on a remote machine.
//
// The tools sit behind the path policy (package pathpolicy): a handler never looks at the path
// string a model wrote, only at [tool.ResolvedPath.Resolved], the target policy resolved and
// allowed. Between that decision and the handler a symlink may be swapped in, so each
// operation checks again where it happens:
//
//   - When the environment's workspace is a host directory ([backend.HostDir], the local
//     backend), files are opened through an [os.Root]: no component, link or swap can lead a
//     read or a write out of that directory, and an operation whose target turned into a link
//     after the decision is refused with symlink_escape.
//   - Elsewhere each operation is one POSIX sh command that first enters the target's
//     directory with cd -P, compares pwd -P with the directory policy resolved, refuses a
//     target that became a symlink, and only then works on the file relative to that
//     directory. Only busybox-level utilities are used (head, sed, awk, wc, mktemp, mv, find,
//     grep).
//
// Content never travels on a command line: write_file and patch send it on stdin, into a
// temporary file beside the target that is renamed over it, so a reader sees the old file or
// the new one and never half of either. search_files passes its pattern and paths as
// separate arguments after -e and --, never through a shell string, so a pattern such as
// "--pre=/bin/sh" is searched for and not obeyed.
package fileops
