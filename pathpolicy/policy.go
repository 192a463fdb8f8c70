package pathpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

var _ pipeline.Policy = (*Policy)(nil)

// DecidedBy names this policy in verdicts.
const DecidedBy = "policy:paths"

// Option adjusts construction.
type Option func(*options) error

type options struct {
	protected      []string
	contentReaders []string
}

// WithProtectedFiles names files or directories no call may read or write, whatever the
// roots say: the configuration file and the receipt ledger. Paths are absolute as the
// environment sees them, or relative to its workspace.
func WithProtectedFiles(paths ...string) Option {
	return func(o *options) error {
		for _, p := range paths {
			if p == "" || strings.ContainsRune(p, 0) {
				return fmt.Errorf("pathpolicy: protected file %q is not a usable path", p)
			}
		}
		o.protected = append(o.protected, paths...)
		return nil
	}
}

// WithContentReaders names the tools whose read of a path returns the file's content, so
// that a whole-file read of a file over max_read_bytes is denied as too_large (default:
// read_file). A call that sets "offset" or "limit" reads a window and is not denied.
func WithContentReaders(names ...string) Option {
	return func(o *options) error {
		o.contentReaders = names
		return nil
	}
}

// Policy is the path policy: a [pipeline.Policy] that checks the tool allowlist, the write
// size and every path a call names.
type Policy struct {
	cfg  Config
	opts options
	// fixed is fixedPaths' last answer, for the workspace it was asked about: every Check
	// asks, with the same workspace for as long as its environment lives.
	fixed atomic.Pointer[fixed]
}

// New checks cfg and returns the policy.
func New(cfg Config, opts ...Option) (*Policy, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{contentReaders: []string{"read_file"}}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Policy{cfg: cfg, opts: o}, nil
}

// Config returns the effective configuration, defaults filled in.
func (p *Policy) Config() Config { return p.cfg }

// DenialBudget is the number of denials a session may collect; the pipeline enforces it.
func (p *Policy) DenialBudget() int { return p.cfg.DenialBudget }

// Hides reports whether a path found beneath an allowed directory (by a search, a listing)
// must be left out because a deny name matches it. p is absolute or relative to the
// workspace.
func (p *Policy) Hides(name string) bool { return MatchName(p.cfg.DenyNames, name) }

// Check decides one call: the tool allowlist, the size of what it writes, then each path
// it names, resolved inside req.Env. It reads the environment and changes nothing.
func (p *Policy) Check(ctx context.Context, req *pipeline.Request) (pipeline.Verdict, error) {
	name := req.Call.Name
	if req.Tool != nil {
		name = req.Tool.Name
	}
	if len(p.cfg.AllowedTools) > 0 && !slices.Contains(p.cfg.AllowedTools, name) {
		return verdict(Outcome{Code: CodeToolNotAllowed, Message: fmt.Sprintf(
			"tool %q is not allowed here; the allowed tools are %s", name, strings.Join(p.cfg.AllowedTools, ", "))}, nil), nil
	}
	args := decodeArgs(req.Args)
	if len(req.PathRefs) == 0 {
		return verdict(Outcome{Allowed: true, Code: CodeAllowed}, nil), nil
	}
	if req.Env == nil {
		return pipeline.Verdict{}, errors.New("pathpolicy: request has paths but no environment")
	}
	ws := req.Env.Describe().Workspace

	paths := make([]tool.ResolvedPath, len(req.PathRefs))
	targets := make([]Target, len(req.PathRefs))
	for i, ref := range req.PathRefs {
		paths[i] = tool.ResolvedPath{Arg: ref.Arg, Raw: ref.Path, Access: ref.Access}
		targets[i] = Target{Raw: ref.Path, Access: ref.Access}
	}
	// Lexical step: anything malformed is refused before the environment is asked.
	for i, ref := range req.PathRefs {
		lex, err := Normalize(ws, ref.Path)
		if err != nil {
			return verdict(Outcome{Code: CodeInvalidPath, Message: err.Error() + "; give a plain path relative to the workspace", Retryable: true}, paths), nil
		}
		paths[i].Resolved = lex
		targets[i].Path = lex
	}
	if o := p.checkWriteSize(req.PathRefs, args); !o.Allowed {
		return verdict(o, paths), nil
	}

	// Resolution step: the workspace, roots, protected files and paths in one command.
	rules, err := p.resolve(ctx, req.Env, ws, targets, paths)
	if err != nil {
		return pipeline.Verdict{}, err
	}
	for i, t := range targets {
		o := Decide(rules, t)
		if !o.Allowed {
			// The ledger keeps the lexical path of a denied target, not where a link led,
			// and nothing about what lies there.
			paths[i].Resolved, paths[i].Exists = t.Path, false
			return verdict(o, paths), nil
		}
		if o := p.checkReadSize(name, t, args); !o.Allowed {
			return verdict(o, paths), nil
		}
	}
	return verdict(Outcome{Allowed: true, Code: CodeAllowed}, paths), nil
}

// resolve resolves, in one request to env, the workspace ws, the roots and protected files
// of the policy and the targets (their lexical paths set): it returns the rules with every
// root's real path, and fills in each target's resolution and the resolved path the ledger
// keeps (paths).
func (p *Policy) resolve(ctx context.Context, env backend.Environment, ws string, targets []Target, paths []tool.ResolvedPath) (Rules, error) {
	fx := p.fixedPaths(ws)
	all := fx.all()
	for _, t := range targets {
		all = append(all, t.Path)
	}
	rs, err := resolveWith(ctx, env, all)
	if err != nil {
		return Rules{}, fmt.Errorf("pathpolicy: %w", err)
	}
	wsReal := rs[0].Real
	rules := Rules{DenyNames: p.cfg.DenyNames}
	next := 1
	take := func(ps, conf []string) []Root {
		out := make([]Root, len(ps))
		for i, q := range ps {
			out[i] = Root{Path: q, Real: rs[next].Real, ViaLink: !isPlace(wsReal, conf[i], rs[next])}
			next++
		}
		return out
	}
	rules.ReadRoots = take(fx.read, fx.readConf)
	rules.WriteRoots = take(fx.write, fx.writeConf)
	for _, r := range take(fx.protected, fx.protected) {
		rules.Protected = append(rules.Protected, r.Path, r.Real)
	}
	for i := range targets {
		r := rs[next]
		next++
		t := &targets[i]
		t.Real, t.Exists, t.Kind, t.Link, t.ViaLink, t.Loop, t.Unresolvable, t.Links, t.Size =
			r.Real, r.Exists, r.Kind, r.Link, r.ViaLink, r.Loop, r.DotDot, r.Links, r.Size
		paths[i].Resolved, paths[i].Exists = t.Real, t.Exists
	}
	return rules, nil
}

func verdict(o Outcome, paths []tool.ResolvedPath) pipeline.Verdict {
	d := pipeline.Deny
	if o.Allowed {
		d = pipeline.Allow
	}
	return pipeline.Verdict{Decision: d, Code: o.Code, Message: o.Message, DecidedBy: DecidedBy, Retryable: o.Retryable, Paths: paths}
}

// writeArgs are the arguments whose text a write puts into a file.
var writeArgs = []string{"content", "new_string"}

func (p *Policy) checkWriteSize(refs []tool.PathRef, args map[string]json.RawMessage) Outcome {
	if !slices.ContainsFunc(refs, func(r tool.PathRef) bool { return r.Access == tool.Write }) {
		return Outcome{Allowed: true}
	}
	for _, k := range writeArgs {
		var s string
		if json.Unmarshal(args[k], &s) != nil {
			continue
		}
		if int64(len(s)) > p.cfg.MaxWriteBytes {
			return Outcome{Code: CodeTooLarge, Retryable: true, Message: fmt.Sprintf(
				"%s is %d bytes, over max_write_bytes (%d); write the file in smaller parts or change it with patch",
				k, len(s), p.cfg.MaxWriteBytes)}
		}
	}
	return Outcome{Allowed: true}
}

func (p *Policy) checkReadSize(toolName string, t Target, args map[string]json.RawMessage) Outcome {
	if t.Access != tool.Read || t.Kind != KindFile || t.Size <= p.cfg.MaxReadBytes ||
		!slices.Contains(p.opts.contentReaders, toolName) {
		return Outcome{Allowed: true}
	}
	if isSet(args["offset"]) || isSet(args["limit"]) {
		return Outcome{Allowed: true}
	}
	return Outcome{Code: CodeTooLarge, Retryable: true, Message: fmt.Sprintf(
		"%s is %d bytes, over max_read_bytes (%d); read it in parts with offset and limit (for example offset=1, limit=2000), or find what you need with search_files",
		t.Raw, t.Size, p.cfg.MaxReadBytes)}
}

func isSet(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

func decodeArgs(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return m
}

// fixed are the paths every Check resolves before the call's own, absolute, with the
// configured entries of the roots they came from. They are lexical: a pure function of the
// configuration and the workspace's name, resolved afresh by every Check.
type fixed struct {
	key              string // the workspace as given to fixedPaths
	ws               string
	read, readConf   []string
	write, writeConf []string
	protected        []string
}

// fixedPaths returns the fixed paths for workspace ws; their slices are shared, and read only.
func (p *Policy) fixedPaths(ws string) fixed {
	if fx := p.fixed.Load(); fx != nil && fx.key == ws {
		return *fx
	}
	fx := fixed{key: ws, ws: path.Clean(ws)}
	fx.read, fx.readConf = absAll(ws, p.cfg.ReadRoots)
	fx.write, fx.writeConf = absAll(ws, p.cfg.WriteRoots)
	fx.protected, _ = absAll(ws, p.opts.protected)
	p.fixed.Store(&fx)
	return fx
}

// all lists them in the order Check reads their resolutions: the workspace, the read
// roots, the write roots, the protected files.
func (fx fixed) all() []string {
	return slices.Concat([]string{fx.ws}, fx.read, fx.write, fx.protected)
}

// absAll makes configured paths absolute and returns them with the entries they came from;
// Validate has refused the ones Normalize would.
func absAll(ws string, ps []string) (abs, conf []string) {
	for _, p := range ps {
		if n, err := Normalize(ws, p); err == nil {
			abs, conf = append(abs, n), append(conf, p)
		}
	}
	return abs, conf
}

// isPlace reports whether a configured root resolved to where it lies: the resolved
// workspace joined with its relative form, or its own cleaned absolute form. A root that is
// or passes through a symbolic link resolves elsewhere (one that does not exist yet resolves
// to itself, and nothing can lie under it).
func isPlace(wsReal, conf string, r resolved) bool {
	want, err := Normalize(wsReal, conf)
	return err == nil && !r.Loop && !r.DotDot && r.Real == want
}
