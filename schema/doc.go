// Package schema compiles JSON Schemas and turns a failed validation into a list of
// violations, each naming the JSON path of the offending value.
//
// Tool arguments, tool outputs and configuration files are all checked against JSON Schemas,
// and in each case the reader — a model retrying a call, a person fixing a config — needs
// every problem at once and where it is (`arguments.content: missing property`), not the
// first error of a nested tree. The library's detailed output is walked to its leaves and
// rewritten in that form.
//
// Validation runs for every call, twice; most values are valid, and the library allocates
// its way through a valid one as through an invalid one. A schema built only of the common
// keywords therefore also gets a plan (fast.go) that recognises a valid value without
// allocating; whatever the plan cannot vouch for goes to the library, which alone refuses.
package schema
