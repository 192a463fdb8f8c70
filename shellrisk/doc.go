// Package shellrisk judges what a shell command may do before anything runs it.
//
// It exists because a model's tool call is text written by something that can be wrong or
// be steered by what it has read. The judgement therefore cannot rest on how a command
// looks: `\rm -rf /`, `{rm,-rf,/}` and `echo cm0gLXJmIC8= | base64 -d | sh` look harmless to
// a regular expression and are not. [Classifier.Classify] parses the command with a real
// shell parser (mvdan.cc/sh, bash dialect), walks every statement — pipelines, lists,
// subshells, functions, loops, redirections, here-documents, substitutions — and recurses
// into what runs code (`sh -c`, `eval`, `sudo`, `xargs`, `find -exec`, `ssh host CMD`, …).
// Quoted text given to a program as data stays data: `git commit -m "rm -rf /"` is not a
// deletion. What it cannot know (a command name built from a variable, a script piped into
// a shell) it judges by what it could be.
//
// The knowledge of programs lives in data, not in Go: rules.toml (carried in the binary
// decoded, as rules_data.go, which a test keeps equal to it) says which programs are
// read-only, which flags raise risk, which subcommands are safe, which flags carry code,
// which paths are sensitive and which reasons are catastrophic enough to be refused in every
// mode (the hard-deny list). Users extend it from configuration through [RulesConfig].
//
// The package is pure: it logs nothing, loads no configuration and touches no file. It
// returns a [Verdict]; package approval turns that into a decision.
//
// The code follows the walk: classify.go is the entry point, walker.go the state of one
// walk, statements.go the shell's compound statements and redirections, calls.go one simple
// command, flags.go how a program's options are read, wrappers.go the programs that run
// other programs or code, operands.go what a program does to its operands, paths.go where a
// path leads, words.go how a word expands, state.go what the shell remembers (variables,
// functions, the working directory), scripts.go the sed and awk mini-languages,
// interpreters.go code in other languages, exfiltration.go what leaves through the network,
// dialects.go the POSIX sh reading of bash syntax, lexing.go where the parser and the shells
// may disagree, secrets.go which paths hold credentials, context.go the policy around a
// command, and rules.go and compile.go the rules data.
package shellrisk
