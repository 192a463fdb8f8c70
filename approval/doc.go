// Package approval decides, before anything runs, whether a terminal command may run now,
// must wait for a person, or is refused.
//
// It exists because a model's tool call is text written by something that can be wrong or
// be steered by what it has read. The decision therefore cannot rest on how a command looks:
// `\rm -rf /`, `{rm,-rf,/}` and `echo cm0gLXJmIC8= | base64 -d | sh` look harmless to a
// regular expression and are not. The [Classifier] parses the command with a real shell
// parser (mvdan.cc/sh, bash dialect), walks every statement — pipelines, lists, subshells,
// functions, loops, redirections, here-documents, substitutions — and recurses into what
// runs code (`sh -c`, `eval`, `sudo`, `xargs`, `find -exec`, `ssh host CMD`, …). Quoted
// text given to a program as data stays data: `git commit -m "rm -rf /"` is not a deletion.
// What it cannot know (a command name built from a variable, a script piped into a shell)
// it judges by what it could be.
//
// The knowledge of programs lives in data, not in Go: rules.toml, embedded in the binary,
// says which programs are read-only, which flags raise risk, which subcommands are safe,
// which flags carry code, which paths are sensitive and which reasons are catastrophic
// enough to be refused in every mode (the hard-deny list). Users extend it from
// configuration through [Config.Rules].
//
// The [Gate] turns a [Verdict] into a [Decision] according to the mode (auto, manual,
// smart), the backend's isolation, a per-session cache of approvals, a guard model reached
// over an OpenAI-compatible endpoint, and an [Approver] that puts the question to a person.
// Nothing is ever approved because nobody was there to say no: without an answer the call
// is refused with code approval_required.
//
// The classifier is a pure function: it logs nothing and returns data. The gate logs its
// decisions through an injected hclog.Logger.
package approval
