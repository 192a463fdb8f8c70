// Package clientprobe is a model server on loopback that coding-agent CLIs (Claude Code over
// the Anthropic Messages API, Codex over the OpenAI Responses API) talk to instead of a model
// service, with a script in the model's place.
//
// It exists because what a client does with Airlock can only be known by running the client:
// which of its own tools it offers its model once Airlock is installed, and what it puts in
// front of the model after a tool call (the clients read a result's structuredContent, not
// its text, when it has one — no SDK test shows that). `airlock install --check` runs the
// installed client against it to report the tools the model would really be offered, and the
// end-to-end tests drive whole sessions through it: each request carries what the client
// sent back for the previous call, so the script checks it and decides the next call.
//
// Both APIs are spoken streaming, as the clients ask for them; only the events the clients
// read are sent. A request with no tools (a client's title or summary side request) is
// answered with plain text and not shown to the script.
package clientprobe
