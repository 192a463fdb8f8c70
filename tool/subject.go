package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/airlock-dev/airlock/receipt"
)

// Subject is what a person approves of one call: everything that decides what the call
// will do, and what an approval "for the session" covers. A tool declares it from its
// arguments ([Definition.Subject]) as a backend declares its record; a tool that declares
// nothing is shown whole ([DefaultSubject]).
type Subject struct {
	// Command is the shell command the call runs, for the classifier; empty for a tool that
	// runs none.
	Command string
	// Fields are what decides the call's effect, in the order a person reads them: for a
	// fetch the method and the full URL, for a command the command and where it runs.
	// Values are the agent's text: whoever shows them escapes them.
	Fields []Field
	// Key identifies what an approval for the session covers: a later call of the session
	// with the same tool and the same Key runs without asking again. It never covers more
	// than Session says in words.
	Key string
	// Session says in words what an approval for the session covers ("this exact command
	// in this directory").
	Session string
}

// Field is one labelled value of a [Subject].
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Preview shows a person a call's effect before it runs, built through the tool's own
// road: the paths policy resolved, files opened as the handler opens them, the diff the
// model is shown after the write. It is read-only.
type Preview func(ctx context.Context, inv *Invocation) (string, error)

// SubjectOf returns what a person approves of a call to t with these (validated)
// arguments: the tool's own declaration, or every argument.
func (t *Tool) SubjectOf(args json.RawMessage) (Subject, error) {
	if t.Definition.Subject == nil {
		return DefaultSubject(args)
	}
	s, err := t.Definition.Subject(args)
	if err != nil {
		return Subject{}, fmt.Errorf("%s: subject: %w", t.Name, err)
	}
	if s.Key == "" || s.Session == "" {
		// A declaration that leaves the session's reach open gets the narrowest one.
		s.Key, s.Session = ArgumentsKey(args), SessionSameArguments
	}
	return s, nil
}

// SessionSameArguments is what an approval for the session covers by default.
const SessionSameArguments = "this exact call again: the same tool with the same arguments"

// ArgumentsKey is the SHA-256 of the canonical arguments: the same key means the same call.
func ArgumentsKey(args json.RawMessage) string { return receipt.HashArguments(args) }

// DefaultSubject shows every argument, by name, its value as JSON (a string as itself),
// and lets an approval for the session cover only the same arguments again.
func DefaultSubject(args json.RawMessage) (Subject, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return Subject{}, fmt.Errorf("subject: arguments: %w", err)
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	s := Subject{Key: ArgumentsKey(args), Session: SessionSameArguments}
	for _, n := range names {
		s.Fields = append(s.Fields, Field{Name: n, Value: JSONValue(m[n])})
	}
	return s, nil
}

// JSONValue renders one argument for a person: a string as its text, anything else as its
// canonical JSON.
func JSONValue(v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s
	}
	return string(receipt.Canonical(v))
}
