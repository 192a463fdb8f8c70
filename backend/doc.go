// Package backend holds the contract between Airlock and the places where commands run.
//
// Everything above this package (the pipeline, the file tools, the scheduler) talks only to
// [Environment]; local processes, Docker containers and SSH hosts each implement it in a
// package of their own, and never import each other. The contract is kept to a handful of
// context-first methods so that a new backend is small to write and easy to check: the
// conformance suite in backend/backendtest runs the same cases against every implementation.
//
// Two rules live here because every backend must apply them the same way:
//
//   - [EnvPolicy] decides which variables reach a command. A name containing KEY, TOKEN,
//     SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH never passes, whoever asks for it.
//   - [CappedBuffer] bounds what a command's output can cost while it streams, keeping its head
//     and tail, so that a command printing gigabytes holds only a few kilobytes in memory.
//
// A non-zero exit code is a [Result], never an error: errors mean the command could not be run
// or was refused.
package backend
