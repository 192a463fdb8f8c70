package shellrisk

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep classification cheap on hostile input. Beyond them the verdict is
// too_complex, which is never safe.
const (
	maxCommandBytes = 1 << 20 // bytes of command text
	maxDepth        = 12      // nested code: sh -c "eval 'bash -c …'"
	maxCalls        = 4096    // simple commands judged, across all nesting
	maxSteps        = 1 << 16 // statements walked, across loops tried per item
	maxSegment      = 400     // bytes of source text kept in a reason
	maxLoopItems    = 4       // for-loop items tried one by one as the loop variable
	maxFindRoots    = 4       // find roots substituted for {} in -exec
)

// Classifier judges shell commands against a rule set. It is safe for concurrent use.
type Classifier struct {
	rules *ruleSet
}

// NewClassifier builds a classifier from the embedded rules with extra applied on top (see
// [RulesConfig] for how entries combine). With no extra rules it returns the one classifier
// of the embedded rules, built once per process: decoding and compiling them is the larger
// part of a cold `airlock exec`'s own work, and the runtime asks for it twice (checking the
// config, then building the gate). A Classifier is never changed once built.
func NewClassifier(extra RulesConfig) (*Classifier, error) {
	if extra.IsZero() {
		return defaultClassifier()
	}
	return buildClassifier(extra)
}

func buildClassifier(extra RulesConfig) (*Classifier, error) {
	rc, err := DefaultRules()
	if err != nil {
		return nil, err
	}
	rc.merge(extra)
	rs, err := compile(rc, extra.IsZero())
	if err != nil {
		return nil, err
	}
	return &Classifier{rules: rs}, nil
}

// IsZero reports whether rc adds nothing to the embedded rules.
func (rc RulesConfig) IsZero() bool { return reflect.ValueOf(rc).IsZero() }

var defaultClassifier = sync.OnceValues(func() (*Classifier, error) {
	return buildClassifier(RulesConfig{})
})

// Classify judges command with the embedded rules.
func Classify(command string) Verdict {
	return ClassifyIn(Context{}, command)
}

// ClassifyIn judges command with the embedded rules, in a context.
func ClassifyIn(cx Context, command string) Verdict {
	c, err := defaultClassifier()
	if err != nil {
		// The embedded rules are checked by the tests; should they ever fail to load, no
		// command is safe.
		return Verdict{Command: command, Risk: RiskDangerous, Parsed: false,
			Reasons: []Reason{{Code: "rules_error", Segment: err.Error(), Risk: RiskDangerous}}}
	}
	return c.ClassifyIn(cx, command)
}

// Classify parses command as bash and judges every statement in it, with the zero
// [Context]. The verdict's risk is the highest risk of its reasons; a command that cannot
// be parsed is never safe.
func (c *Classifier) Classify(command string) Verdict {
	return c.ClassifyIn(Context{}, command)
}

// ClassifyIn is [Classifier.Classify] in a context: the workspace, the policy's roots and
// deny names, and the files no command may reach.
//
// No input makes it panic: should the walk ever fail on one, the verdict for that command
// is internal_error (dangerous, not parsed) and the caller goes on.
func (c *Classifier) ClassifyIn(cx Context, command string) (v Verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = Verdict{Command: command, Risk: RiskDangerous, Parsed: false, Commands: []Command{},
				Reasons: []Reason{{Code: codeInternalError, Segment: fmt.Sprint(r), Risk: RiskDangerous}}}
		}
	}()
	return c.classify(cx, command)
}

func (c *Classifier) classify(cx Context, command string) Verdict {
	v := Verdict{Command: command, Reasons: []Reason{}, Parsed: true, Commands: []Command{}}
	w := &walker{
		rules:  c.rules,
		cx:     cx.normalised(),
		v:      &v,
		src:    command,
		st:     newState(),
		active: map[*funcDef]int{},
		seen:   map[reasonKey]bool{},
	}
	w.seedVars()
	if len(command) > maxCommandBytes {
		v.Parsed = false
		w.add(codeTooComplex, command)
	} else if f, err := parse(command); err != nil {
		v.Parsed = false
		w.add(codeParseError, command)
	} else if seg, dialects := readings(command, f, true); seg != "" {
		v.Parsed = false
		w.add(codeParseError, seg)
	} else {
		var ps posixSource
		if dialects {
			ps = posixRewrite(command, f)
		}
		w.stmts(f.Stmts, stdin{})
		if dialects {
			w.posixReading(ps)
		}
	}
	if !v.Parsed {
		v.Commands = v.Commands[:0]
	}
	if !v.Parsed && v.Risk < RiskExec {
		// Whatever the rules say about parse errors, text that was not understood does not run
		// unasked.
		v.Risk = RiskExec
	}
	return v
}

// parsers keeps bash parsers between parses: a parser is a few KB (its read buffers), and
// one classification parses several times (sh -c, eval, aliases, the POSIX readings).
var parsers = sync.Pool{New: func() any { return new(syntax.Parser) }}

// parse parses src as bash, with a parser in the state [syntax.NewParser] gives.
func parse(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	syntax.Variant(syntax.LangBash)(p)
	syntax.KeepComments(true)(p)
	f, err := p.Parse(strings.NewReader(src), "")
	// Zeroed, it holds nothing of this parse (the tree, the source) and is what
	// syntax.NewParser starts from.
	*p = syntax.Parser{}
	parsers.Put(p)
	if err != nil {
		return nil, fmt.Errorf("parse command: %w", err)
	}
	return f, nil
}

// Normalise returns command as the shell printer formats it, so that spacing does not
// matter but every word does: the key of a cache of approvals. Text that does not parse
// is kept as it is.
func Normalise(cmd string) string {
	f, err := parse(cmd)
	if err != nil {
		return strings.TrimSpace(cmd)
	}
	var b bytes.Buffer
	if err := syntax.NewPrinter().Print(&b, f); err != nil {
		return strings.TrimSpace(cmd)
	}
	return strings.TrimSpace(b.String())
}
