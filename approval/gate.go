package approval

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/shellrisk"
	"github.com/airlock-dev/airlock/tool"

	"github.com/hashicorp/go-hclog"
)

// Decision codes. They are stable: receipts and clients branch on them.
const (
	CodeAutoApproved = "auto_approved"
	CodeSafeCommand  = "safe_command"
	CodeReadOnlyTool = "read_only_tool"
	CodeWriteAllowed = "write_allowed"
	// CodeConfinedCode: the command runs the project's code where commands are confined
	// and writes are allowed (see Config.AskToRunCode).
	CodeConfinedCode     = "confined_code"
	CodeIrreversibleOK   = "irreversible_allowed"
	CodeIsolatedBackend  = "isolated_backend"
	CodeGuardApproved    = "guard_approved"
	CodeApprovedByPerson = "approved_by_person"
	CodeSessionApproved  = "session_approved"

	CodeHardDeny         = "hard_deny"
	CodeApprovalRequired = "approval_required"
	CodeDeniedByPerson   = "denied_by_person"
	// CodeApprovalPending: a person was asked and has not answered yet; the call did not
	// run and can be answered later (see [PendingError]).
	CodeApprovalPending = "approval_pending"
	// CodeApprovalExpired: nobody answered before the approval expired; a denial.
	CodeApprovalExpired = "approval_expired"
	CodeGuardDenied     = "guard_denied"
	// CodeChangedSinceApproval: what the call would do changed after the person approved it
	// (the file a write replaces was changed meanwhile); the call did not run.
	CodeChangedSinceApproval = "changed_since_approval"
)

// maxCachedPerSession bounds the session cache.
const maxCachedPerSession = 1024

// Request is one terminal call to decide on.
type Request struct {
	CallID    string
	SessionID string
	Command   string
	// Tool names the tool when the call is not a shell command (read_file, write_file, …);
	// Command then only describes it.
	Tool string
	// Kind names the backend (local, docker, ssh).
	Kind string
	// Isolated is true when the backend is a container with no writable host mount and no
	// network.
	Isolated bool
	// Enforced is true when something beyond the classifier holds the call to the roots:
	// a container, a kernel sandbox, or a file tool's own path checks. Without it, allow_write
	// does not apply and only safe commands run without a person.
	Enforced bool
	// SecretsHidden is true when what runs the command keeps deny_names files and the
	// credential stores unreadable to it (the kernel sandbox): a recursive read of the
	// workspace then cannot reach a secret (see shellrisk.Context.SecretsHidden).
	SecretsHidden bool
	// Confined is true when what a command's code can do is bounded where it runs: a
	// container or the kernel sandbox, with no network beyond an allowlist. Running the project's
	// code is then bounded as a write is (see Config.AskToRunCode).
	Confined bool
	// Scratch and TempDir are the session's private directories and its $TMPDIR, from
	// the backend's Description: the classifier judges a write there as a plain write.
	Scratch []string
	TempDir string
	// OnWait is called just before the gate blocks on a person, so that the caller can
	// write a receipt saying the call is waiting.
	OnWait func()
	// Key is what an approval for the session covers: a later call with the same Tool and
	// Key is approved by it. Empty means the normalised command.
	Key string
	// Prompt is what a person is shown beyond the command and its verdict (the call's
	// declared fields, what "for the session" covers); Preview, when set, builds the
	// call's effect for them, only when a person is asked.
	Prompt  Prompt
	Preview func(ctx context.Context) (string, error)
	// Describe, when set, fills Key, Prompt and Preview; the gate calls it only for a call
	// that does not run unasked.
	Describe func(r *Request) error
}

// sessionKey is what the session cache remembers an approval of r under: a tool's own
// calls never match another tool's.
func (r Request) sessionKey() string {
	k := r.Key
	if k == "" {
		k = shellrisk.Normalise(r.Command)
	}
	return r.Tool + "\x00" + k
}

// Decision is the gate's answer.
type Decision struct {
	Allow     bool              `json:"allow"`
	Code      string            `json:"code"`
	DecidedBy string            `json:"decided_by"`
	Message   string            `json:"message"`
	Verdict   shellrisk.Verdict `json:"verdict"`
	// ApprovalID names the open question of a call that waits for a person
	// (code approval_pending).
	ApprovalID string `json:"approval_id,omitempty"`
}

// Gate decides whether terminal calls may run. It is safe for concurrent use.
type Gate struct {
	cfg      Config
	cls      *shellrisk.Classifier
	shell    shellrisk.Context
	approver Approver
	log      hclog.Logger
	guard    *guard

	mu       sync.Mutex
	sessions map[string]*sessionState
}

// sessionState is what the gate remembers about one session.
type sessionState struct {
	approved map[string]bool // normalised command → approved
	denials  int             // guard denials in a row
}

type options struct {
	approver Approver
	logger   hclog.Logger
	client   *http.Client
	getenv   func(string) string
	shell    shellrisk.Context
}

// Option configures a [Gate].
type Option func(*options) error

// WithApprover sets who is asked when a person must decide. Without one, such calls are
// refused with approval_required.
func WithApprover(a Approver) Option {
	return func(o *options) error {
		o.approver = a
		return nil
	}
}

// WithShellContext sets what the classifier knows of where commands run: the workspace,
// the policy's write roots and deny names, and Airlock's own files (the configuration in
// use, the ledger), so that a command is judged as the file tools would be. The default
// is the zero context.
func WithShellContext(cx shellrisk.Context) Option {
	return func(o *options) error {
		o.shell = cx
		return nil
	}
}

// WithLogger sets the logger; the default discards.
func WithLogger(l hclog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("with logger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithHTTPClient sets the client used to reach the guard model.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("with http client: nil client")
		}
		o.client = c
		return nil
	}
}

// WithGetenv sets how the guard's API key is read from the environment.
func WithGetenv(f func(string) string) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("with getenv: nil function")
		}
		o.getenv = f
		return nil
	}
}

// NewGate validates cfg and builds a gate.
func NewGate(cfg Config, opts ...Option) (*Gate, error) {
	o := options{logger: hclog.NewNullLogger(), client: http.DefaultClient, getenv: os.Getenv}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("new gate: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new gate: %w", err)
	}
	cls, err := shellrisk.NewClassifier(cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("new gate: %w", err)
	}
	g := &Gate{
		cfg:      cfg,
		cls:      cls,
		shell:    o.shell,
		approver: o.approver,
		log:      o.logger.Named("approval"),
		sessions: map[string]*sessionState{},
	}
	if cfg.Mode == ModeSmart {
		key := ""
		if cfg.Smart.APIKeyEnv != "" {
			key = o.getenv(cfg.Smart.APIKeyEnv)
			if key == "" {
				return nil, fmt.Errorf("new gate: approvals.smart.api_key_env: environment variable %s is empty", cfg.Smart.APIKeyEnv)
			}
		}
		g.guard = &guard{cfg: cfg.Smart, client: o.client, apiKey: key}
	}
	return g, nil
}

// shellrisk.Classifier returns the gate's classifier, with the configured rules.
func (g *Gate) Classifier() *shellrisk.Classifier { return g.cls }

// Decide classifies r.Command and decides. The hard-deny list is refused in every mode;
// then the mode, the backend's isolation, the session cache, the guard and a person are
// consulted in that order. Decide returns an error only when it could not decide (the
// context ended while waiting); the Decision is then a refusal.
func (g *Gate) Decide(ctx context.Context, r Request) (Decision, error) {
	v := g.cls.ClassifyIn(g.contextFor(r), r.Command)
	log := g.log.With("call_id", r.CallID, "session_id", r.SessionID)
	d, err := g.decide(ctx, r, v, log)
	d.Verdict = v
	log.Info("approval decided", "allow", d.Allow, "code", d.Code, "decided_by", d.DecidedBy, "risk", v.Risk.String())
	return d, err
}

// contextFor is the classifier's context for one request: the gate's, with the session's
// own scratch directories and $TMPDIR added, and whether anything confines the command.
func (g *Gate) contextFor(r Request) shellrisk.Context {
	cx := g.shell
	// Where nothing confines the command, a program the repository's configuration names
	// would run as the user: the classifier judges git commands that may run one as exec.
	cx.Unconfined = !r.Enforced
	cx.SecretsHidden = r.Enforced && r.SecretsHidden
	if len(r.Scratch) > 0 {
		cx.Scratch = append(slices.Clone(cx.Scratch), r.Scratch...)
	}
	if r.TempDir != "" {
		cx.TMPDIR = r.TempDir
	}
	return cx
}

// DecideVerdict decides on a verdict the caller made itself, for tools that are not shell
// commands (a file write is shellrisk.RiskWrite without any parsing). r.Command then describes the call
// for the guard model and the person asked.
func (g *Gate) DecideVerdict(ctx context.Context, r Request, v shellrisk.Verdict) (Decision, error) {
	// A tool that is not a shell command holds itself to the roots (the path policy checks
	// every path it names, and it opens them by descriptor).
	r.Enforced = true
	log := g.log.With("call_id", r.CallID, "session_id", r.SessionID)
	d, err := g.decide(ctx, r, v, log)
	d.Verdict = v
	log.Info("approval decided", "allow", d.Allow, "code", d.Code, "decided_by", d.DecidedBy, "risk", v.Risk.String())
	return d, err
}

// confinedCode are the reasons that only say a command runs code — the project's build,
// tests, scripts, a program the rules do not know — whose effect the sandbox bounds where
// commands are confined. Talking to the network, losing work and everything dangerous are
// not among them and still ask.
var confinedCode = map[string]bool{
	"runs_code": true, "runs_script": true, "interpreter_code": true, "unknown_program": true,
	"config_override": true, "env_hijack": true, "repo_program": true,
}

// onlyConfinedCode reports whether every reason of a parsed verdict is a read, a write in the
// workspace, or running code the sandbox bounds.
func onlyConfinedCode(v shellrisk.Verdict) bool {
	if v.FailedClosed() {
		return false
	}
	for _, r := range v.Reasons {
		if r.Risk != shellrisk.RiskSafe && r.Risk != shellrisk.RiskWrite && !(r.Risk == shellrisk.RiskExec && confinedCode[r.Code]) {
			return false
		}
	}
	return true
}

func allow(code, by, msg string) Decision {
	return Decision{Allow: true, Code: code, DecidedBy: by, Message: msg}
}

func deny(code, by, msg string) Decision {
	return Decision{Allow: false, Code: code, DecidedBy: by, Message: msg}
}

func (g *Gate) decide(ctx context.Context, r Request, v shellrisk.Verdict, log hclog.Logger) (Decision, error) {
	if reason, ok := v.HardDenyReason(); ok {
		return deny(CodeHardDeny, "hard_deny:"+reason.Code,
			fmt.Sprintf("refused in every mode: %s in %q", reason.Code, reason.Segment)), nil
	}
	if reason, ok := v.HostHardDenyReason(); ok && !r.Isolated {
		return deny(CodeHardDeny, "hard_deny:"+reason.Code,
			fmt.Sprintf("refused in every mode on a machine that is not isolated: %s in %q", reason.Code, reason.Segment)), nil
	}
	if g.cfg.Mode == ModeAuto {
		return allow(CodeAutoApproved, "mode:auto", "auto mode runs everything but the hard-deny list"), nil
	}
	if g.cfg.DockerAutoApprove && r.Isolated {
		return allow(CodeIsolatedBackend, "isolation", fmt.Sprintf("the %s backend is isolated", r.Kind)), nil
	}
	switch {
	case v.Risk == shellrisk.RiskSafe && v.Parsed && r.Tool != "":
		return allow(CodeReadOnlyTool, "risk:safe", r.Tool+" only reads"), nil
	case v.Risk == shellrisk.RiskSafe && v.Parsed:
		return allow(CodeSafeCommand, "risk:safe", "read-only command"), nil
	case v.Risk == shellrisk.RiskWrite && v.Parsed && g.cfg.AllowWrite && r.Enforced:
		return allow(CodeWriteAllowed, "allow_write", "writes in the workspace are allowed"), nil
	case v.Risk == shellrisk.RiskIrreversible && v.OnlyWrites() && g.cfg.AllowWrite && g.cfg.AllowIrreversible && r.Enforced:
		return allow(CodeIrreversibleOK, "allow_irreversible", "writes that lose work are allowed"), nil
	case v.Risk == shellrisk.RiskExec && onlyConfinedCode(v) && g.cfg.AllowWrite && !g.cfg.AskToRunCode && r.Enforced && r.Confined:
		return allow(CodeConfinedCode, "confined_code", "runs the project's code where commands are confined"), nil
	case (v.Risk == shellrisk.RiskWrite || v.Risk == shellrisk.RiskIrreversible) && v.Parsed && g.cfg.AllowWrite:
		// Without a container or kernel sandbox only a reading of the text stands between
		// the command and the user's files: that is not enough to run it unasked.
		log.Debug("allow_write not applied", "why", "the backend enforces nothing: only safe commands run unasked")
	}
	if r.Describe != nil {
		if err := r.Describe(&r); err != nil {
			return deny(CodeApprovalRequired, "approval", "the call cannot be shown to a person: "+err.Error()), nil
		}
		if r.Tool != "" && len(r.Prompt.Fields) > 0 {
			// The guard judges what a person would be shown: the tool and what decides its
			// effect (a fetch's URL), not the tool's name alone.
			v.Command = fieldsText(r.Tool, r.Prompt.Fields)
		}
	}
	norm := r.sessionKey()
	if g.cfg.SessionCache && g.cached(r.SessionID, norm) {
		return allow(CodeSessionApproved, "session_cache", "approved for the session earlier: "+r.covers()), nil
	}
	if g.guard != nil {
		if d, ok := g.askGuard(ctx, r, v, norm, log); ok {
			return d, nil
		}
	}
	return g.askPerson(ctx, r, v, norm, log)
}

// askGuard asks the guard model. ok is false when the question goes on to a person:
// ESCALATE, any failure, an oversized command, or an open circuit breaker.
func (g *Gate) askGuard(ctx context.Context, r Request, v shellrisk.Verdict, norm string, log hclog.Logger) (Decision, bool) {
	if len(r.Command) > g.cfg.Smart.MaxCommandBytes {
		log.Debug("guard skipped", "why", "command too long", "bytes", len(r.Command))
		return Decision{}, false
	}
	if g.breakerOpen(r.SessionID) {
		log.Debug("guard skipped", "why", "circuit breaker open")
		return Decision{}, false
	}
	answer, err := g.guard.ask(ctx, v)
	if err != nil {
		log.Warn("guard failed, escalating", "error", err)
		return Decision{}, false
	}
	by := "guard:" + g.cfg.Smart.Model
	switch answer {
	case guardApprove:
		g.guardApproved(r.SessionID, norm)
		return allow(CodeGuardApproved, by, "approved by the guard model"), true
	case guardDeny:
		g.guardDenied(r.SessionID)
		return deny(CodeGuardDenied, by, "denied by the guard model"), true
	default:
		return Decision{}, false
	}
}

func (g *Gate) askPerson(ctx context.Context, r Request, v shellrisk.Verdict, norm string, log hclog.Logger) (Decision, error) {
	by := "mode:" + g.cfg.Mode
	if g.approver == nil {
		return deny(CodeApprovalRequired, by, "a person must approve this command and none can be asked"), nil
	}
	if r.OnWait != nil {
		r.OnWait()
	}
	p := r.Prompt
	p.CallID, p.SessionID, p.Command, p.Risk, p.Reasons = r.CallID, r.SessionID, r.Command, v.Risk, v.Reasons
	p.Session = r.covers()
	if r.Preview != nil {
		pv, err := r.Preview(ctx)
		if err != nil {
			// A person never approves an effect nobody could show them.
			log.Warn("approval preview failed", "error", err)
			return deny(CodeApprovalRequired, by, "the call's effect could not be shown to a person: "+err.Error()), nil
		}
		p.Preview = pv
	}
	ans, err := g.approver.Ask(ctx, p)
	var pe *PendingError
	switch {
	case errors.As(err, &pe):
		d := deny(CodeApprovalPending, by, pe.Error())
		d.ApprovalID = pe.ID
		return d, nil
	case errors.Is(err, ErrExpired):
		return deny(CodeApprovalExpired, "approval:expired", "nobody answered the approval in time; the call did not run"), nil
	case errors.Is(err, ErrNoApprover):
		return deny(CodeApprovalRequired, by, "a person must approve this command and none can be asked"), nil
	case err != nil && ctx.Err() != nil:
		return deny(CodeApprovalRequired, by, "stopped waiting for a person"), fmt.Errorf("approval wait: %w", err)
	case err != nil:
		log.Warn("approver failed", "error", err)
		return deny(CodeApprovalRequired, by, "could not ask a person"), nil
	}
	who := "person"
	if ans.By != "" {
		who = "person:" + ans.By
	}
	if (ans.Choice == Once || ans.Choice == Session) && r.Preview != nil {
		// The person approved the effect they were shown: it must still be the effect.
		if now, err := r.Preview(ctx); err != nil || now != ans.Shown {
			return deny(CodeChangedSinceApproval, who, "what this call would do changed after the person approved it "+
				"(the file changed meanwhile); it did not run: make the call again to ask again"), nil
		}
	}
	switch ans.Choice {
	case Once:
		g.personApproved(r.SessionID, "")
		return allow(CodeApprovedByPerson, who, "approved once"), nil
	case Session:
		g.personApproved(r.SessionID, norm)
		return allow(CodeApprovedByPerson, who, "approved for this session: "+r.covers()), nil
	default:
		msg := "denied"
		if ans.Message != "" {
			msg = "denied: " + ans.Message
		}
		return deny(CodeDeniedByPerson, who, msg), nil
	}
}

// covers says in words what an approval of r for the session covers.
func (r Request) covers() string {
	if r.Prompt.Session != "" {
		return r.Prompt.Session
	}
	return "this exact command again"
}

func (g *Gate) session(id string) *sessionState {
	s, ok := g.sessions[id]
	if !ok {
		s = &sessionState{approved: map[string]bool{}}
		g.sessions[id] = s
	}
	return s
}

func (g *Gate) cached(session, norm string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.sessions[session]
	return ok && s.approved[norm]
}

func (g *Gate) remember(s *sessionState, norm string) {
	if !g.cfg.SessionCache || norm == "" || len(s.approved) >= maxCachedPerSession {
		return
	}
	s.approved[norm] = true
}

func (g *Gate) breakerOpen(session string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.sessions[session]
	return ok && s.denials >= g.cfg.Smart.MaxConsecutiveDenials
}

func (g *Gate) guardApproved(session, norm string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.session(session)
	s.denials = 0
	g.remember(s, norm)
}

func (g *Gate) guardDenied(session string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.session(session).denials++
}

// personApproved closes the circuit breaker: a person has looked at the session again.
func (g *Gate) personApproved(session, norm string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.session(session)
	s.denials = 0
	g.remember(s, norm)
}

// ForgetSession drops what the gate remembers about a session: cached approvals and the
// guard's denial count.
func (g *Gate) ForgetSession(session string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, session)
}

// fieldsText renders a tool call's declared fields on one line, each value quoted.
func fieldsText(name string, fs []tool.Field) string {
	var b strings.Builder
	b.WriteString(name)
	for _, f := range fs {
		fmt.Fprintf(&b, " %s=%q", f.Name, f.Value)
	}
	return b.String()
}
