// Package approval decides, before anything runs, whether a tool call may run now, must
// wait for a person, or is refused.
//
// A shell command is first judged by package shellrisk, which returns a [shellrisk.Verdict]
// (a risk and its reasons). The [Gate] turns a verdict into a [Decision] according to the
// mode (auto, manual, smart), the backend's isolation, a per-session cache of approvals, the
// guard (a model reached over an OpenAI-compatible endpoint, asked in smart mode) and an
// [Approver] that puts the question to a person. Nothing is ever approved because nobody was
// there to say no: without an answer the call is refused with code approval_required.
//
// The gate logs its decisions through an injected hclog.Logger; the classifier it calls
// logs nothing.
package approval
