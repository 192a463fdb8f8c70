// Package toolcall reads a model's tool calls in the forms models and agent frameworks send
// them — Airlock's own `{"name","arguments","call_id"}`, an array of those, an OpenAI tool
// call, or a whole OpenAI assistant message with `tool_calls` — and writes results back in
// the form that the message's sender appends to its conversation: `tool` role messages.
//
// It exists so that every front end that takes calls as JSON (`airlock call` on stdin, the
// HTTP API) reads them the same way and names the same problems, and so that the text a
// model reads of a result is made in one place.
package toolcall
