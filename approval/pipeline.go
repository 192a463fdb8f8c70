package approval

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/concurrency"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/shellrisk"
	"github.com/airlock-dev/airlock/tool"
)

// Step is the gate as a pipeline step: it implements pipeline.Approval for every tool, and
// pipeline.Scoper so that the scheduler knows what a terminal command touches.
//
// Terminal commands are classified from their parsed shell. Other tools are judged by the
// risk class their definition declares: read is safe, write is write, shell and network are
// exec and network, dangerous is dangerous — and then every mode applies to them exactly as to
// a command.
type Step struct {
	Gate *Gate
	// CommandTool names the tool whose "command" argument is a shell command.
	CommandTool string
}

var (
	_ pipeline.Approval = (*Step)(nil)
	_ pipeline.Scoper   = (*Step)(nil)
)

// Approve decides whether an allowed call runs now, waits for a person, or is refused.
func (s *Step) Approve(ctx context.Context, req *pipeline.Request) (pipeline.Verdict, error) {
	d := req.Env.Describe()
	caps := d.Capabilities
	r := Request{
		CallID:    req.Call.ID,
		SessionID: req.SessionID,
		Kind:      d.Kind,
		Isolated:  caps.FilesystemIsolation && caps.NetworkIsolation && !caps.WritableHostMounts,
		// File tools hold themselves to the roots (by descriptor); a shell command is held
		// only where the backend enforces them.
		Enforced: req.Tool.Name != s.CommandTool || caps.Enforced(),
		// The local kernel sandbox hides deny_names files and credential stores from
		// commands; a container keeps the host's credential stores out but mounts the
		// workspace whole, its .env included, and the SSH helper's sandbox is given roots only.
		SecretsHidden: caps.HidesDenyNames,
		// Code that can reach the network can send what it reads (a container mounts the
		// workspace whole): only a container or sandbox without the network bounds it.
		Confined: (caps.FilesystemIsolation || caps.KernelSandbox) && caps.NetworkIsolation,
		OnWait:   req.OnWait,
		Scratch:  d.Scratch,
		TempDir:  d.TempDir,
	}
	// What a person is shown is built only when the gate gets that far: a call that runs
	// unasked pays nothing for it.
	describe := func(r *Request, subj tool.Subject) {
		r.Key = subj.Key
		r.Prompt = Prompt{Tool: req.Tool.Name, Arguments: req.Args, Fields: subj.Fields, Session: subj.Session, Backend: d.Kind, Workdir: d.Workspace}
		for _, p := range req.Paths {
			if p.Arg == "workdir" {
				r.Prompt.Workdir = p.Resolved
			}
		}
		if req.Tool.Preview != nil {
			r.Preview = func(ctx context.Context) (string, error) {
				return req.Tool.Preview(backend.WithCall(ctx, req.Call.ID), previewInvocation(req))
			}
		}
	}
	var dec Decision
	var err error
	if req.Tool.Name == s.CommandTool {
		subj, serr := req.Tool.SubjectOf(req.Args)
		if serr != nil {
			return pipeline.Verdict{}, fmt.Errorf("approval: %w", serr)
		}
		r.Command = subj.Command
		r.Describe = func(r *Request) error { describe(r, subj); return nil }
		dec, err = s.Gate.Decide(ctx, r)
	} else {
		r.Command, r.Tool = describeCall(req), req.Tool.Name
		r.Describe = func(r *Request) error {
			subj, err := req.Tool.SubjectOf(req.Args)
			if err != nil {
				return err
			}
			describe(r, subj)
			return nil
		}
		dec, err = s.Gate.DecideVerdict(ctx, r, shellrisk.Verdict{
			Command: r.Command, Risk: riskOfTool(req.Tool.Risk), Parsed: true, Reasons: []shellrisk.Reason{},
		})
	}
	v := pipeline.Verdict{
		Decision: pipeline.Deny, Code: dec.Code, DecidedBy: dec.DecidedBy, Message: dec.Message,
		Risk: dec.Verdict.Risk.String(), Paths: req.Paths, ApprovalID: dec.ApprovalID,
	}
	if dec.Allow {
		v.Decision = pipeline.Allow
	}
	if !dec.Allow && len(dec.Verdict.Reasons) > 0 {
		v.Message = fmt.Sprintf("%s (risk %s: %s)", dec.Message, dec.Verdict.Risk, strings.Join(dec.Verdict.Codes(), ", "))
	}
	return v, err
}

// Scope says what a terminal command touches: a command judged read-only reads, anything
// else writes — and since a command is not confined to the paths it names (nor to the
// workspace, when roots lie outside it), the scope is the whole filesystem of the
// environment. So a command is ordered against every file call that writes (a read-only one)
// or touches anything (any other), and read-only commands still run beside each other and
// beside reads. Other tools declare their paths themselves.
func (s *Step) Scope(req *pipeline.Request) []concurrency.PathAccess {
	if req.Tool.Name != s.CommandTool {
		return nil
	}
	// req.Risk is the verdict Approve gave; input that did not parse is never safe.
	if req.Risk == shellrisk.RiskSafe.String() {
		return []concurrency.PathAccess{{Path: "/", Access: concurrency.Read}}
	}
	return []concurrency.PathAccess{{Path: "/", Access: concurrency.Write}}
}

// previewInvocation is what a tool's preview gets: the handler's invocation, with the paths
// policy resolved and the environment the call will run in.
func previewInvocation(req *pipeline.Request) *tool.Invocation {
	inv := &tool.Invocation{CallID: req.Call.ID, SessionID: req.SessionID, Args: req.Args, Env: req.Env,
		Paths: map[string]tool.ResolvedPath{}}
	for _, rp := range req.Paths {
		inv.Paths[rp.Arg] = rp
	}
	return inv
}

func riskOfTool(r tool.Risk) shellrisk.Risk {
	switch r {
	case tool.RiskRead:
		return shellrisk.RiskSafe
	case tool.RiskWrite:
		return shellrisk.RiskWrite
	case tool.RiskNetwork:
		return shellrisk.RiskNetwork
	case tool.RiskShell:
		return shellrisk.RiskExec
	default:
		return shellrisk.RiskDangerous
	}
}

// describeCall renders a non-command call for a person or the guard: the tool's name and
// the paths it touches.
func describeCall(req *pipeline.Request) string {
	var parts []string
	for _, p := range req.Paths {
		parts = append(parts, fmt.Sprintf("%s %s=%s", p.Access, p.Arg, p.Resolved))
	}
	sort.Strings(parts)
	return strings.TrimSpace(req.Tool.Name + " " + strings.Join(parts, " "))
}
