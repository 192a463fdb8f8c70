// Package tool owns what a tool is: its contract with the model (name, description, input
// and output JSON Schemas), its contract with the server (risk class, whether it may run in
// parallel, the paths it touches, output policy, timeout) and the handler that does the work.
//
// The [Registry] keeps the two faces apart: [Registry.Specs] is what a model is shown (the
// OpenAI `tools` format), while the [Definition] behind it stays on the server. Schemas are
// compiled once at registration, so a broken schema fails at start-up rather than on the
// first call, and every call's arguments and output are checked against them with every
// violation reported by its JSON path.
package tool
