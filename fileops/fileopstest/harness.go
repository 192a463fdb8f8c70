package fileopstest

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

// Limits the suite's policy uses, small so that over-size cases stay cheap.
const (
	maxRead  = 64 << 10
	maxWrite = 128 << 10
)

// harness is one case's world: a scratch directory in the workspace holding ws (the only
// root), outside and ws-copy (a similar prefix) beside it, a policy and a registry.
type harness struct {
	t       *testing.T
	env     backend.Environment
	scratch string // relative to the workspace
	abs     string // absolute scratch, as the environment sees it
	canary  string
	pol     *pathpolicy.Policy
	reg     *tool.Registry
	seen    []string // everything the model was told
	before  string
}

func newHarness(t *testing.T, env backend.Environment) *harness {
	t.Helper()
	scratch := backendtest.Scratch(t, env)
	h := &harness{
		t: t, env: env, scratch: scratch,
		abs:    path.Join(env.Describe().Workspace, scratch),
		canary: fmt.Sprintf("OUTSIDE-CANARY-%d", time.Now().UnixNano()),
	}
	backendtest.MustSh(t, env, fmt.Sprintf(
		"cd %s && mkdir -p ws outside/sub ws-copy && printf '%%s\\n' %s > outside/secret.txt && "+
			"printf '%%s\\n' %s > outside/sub/deep.txt && printf '%%s\\n' %s > ws-copy/x.txt",
		scratch, h.canary, h.canary, h.canary))
	h.usePolicy([]string{scratch + "/ws"}, []string{scratch + "/ws"})
	h.reg = tool.NewRegistry()
	if err := fileops.Register(h.reg, fileops.OptionsFrom(h.pol.Config())); err != nil {
		t.Fatalf("fileops.Register: %v", err)
	}
	h.before = h.snapshot()
	t.Cleanup(h.checkOutside)
	return h
}

// usePolicy gives the case a policy with these roots (relative to the workspace, or
// absolute), the suite's limits, the default deny names and the protected ledger.
func (h *harness) usePolicy(read, write []string) {
	h.t.Helper()
	pol, err := pathpolicy.New(pathpolicy.Config{
		ReadRoots: read, WriteRoots: write, MaxReadBytes: maxRead, MaxWriteBytes: maxWrite,
	}, pathpolicy.WithProtectedFiles(h.scratch+"/ws/.airlock/receipts.jsonl"))
	if err != nil {
		h.t.Fatalf("pathpolicy.New: %v", err)
	}
	h.pol = pol
}

// ws returns a path relative to the workspace that names rel inside the root.
func (h *harness) ws(rel string) string { return h.scratch + "/ws/" + rel }

// absWS returns rel inside the root as an absolute path.
func (h *harness) absWS(rel string) string { return h.abs + "/ws/" + rel }

// sh runs a command in the scratch directory and returns its stdout.
func (h *harness) sh(command string) string {
	h.t.Helper()
	return backendtest.MustSh(h.t, h.env, "cd "+h.scratch+" && "+command)
}

// snapshot lists everything beside the root: names, types, modes, link counts, sizes and
// checksums.
func (h *harness) snapshot() string {
	h.t.Helper()
	return h.sh("for d in outside ws-copy; do find $d -exec ls -ldn {} \\; | awk '{ print $1, $2, $5, $NF }'; " +
		"find $d -type f -exec cksum {} \\; ; done | sort")
}

// checkOutside fails the test when anything outside the root changed or its content
// reached the model.
func (h *harness) checkOutside() {
	h.t.Helper()
	if h.t.Failed() {
		return
	}
	if after := h.snapshot(); after != h.before {
		h.t.Errorf("outside the root changed:\nbefore:\n%s\nafter:\n%s", h.before, after)
	}
	for _, s := range h.seen {
		if strings.Contains(s, h.canary) {
			h.t.Errorf("content from outside the root reached the model: %q", s)
		}
	}
}

// result is what a call came to.
type result struct {
	verdict pipeline.Verdict
	out     *tool.Output
}

func (r result) denied() bool { return r.verdict.Decision == pipeline.Deny }

// call runs one call the way the pipeline does: lookup, input validation, policy, handler
// with the policy's paths, output validation.
func (h *harness) call(name string, args map[string]any) result {
	h.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	tl, ok := h.reg.Lookup(name)
	if !ok {
		h.t.Fatalf("tool %s not registered", name)
	}
	if vs := tl.ValidateInput(raw); vs != nil {
		h.t.Fatalf("%s %s: input invalid: %v", name, raw, vs)
	}
	refs, err := tl.Paths(raw)
	if err != nil {
		h.t.Fatalf("%s: paths: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := &pipeline.Request{
		Call: pipeline.Call{ID: "c1", Name: name, Arguments: raw}, Tool: tl, Args: raw,
		PathRefs: refs, Env: h.env, SessionID: "s1",
	}
	v, err := h.pol.Check(ctx, req)
	if err != nil {
		h.t.Fatalf("%s %s: policy error: %v", name, raw, err)
	}
	h.seen = append(h.seen, v.Message)
	if v.Decision != pipeline.Allow {
		return result{verdict: v}
	}
	return result{verdict: v, out: h.handle(ctx, tl, raw, v.Paths)}
}

// handle runs the handler with resolved paths, as the pipeline does after policy.
func (h *harness) handle(ctx context.Context, tl *tool.Tool, raw json.RawMessage, paths []tool.ResolvedPath) *tool.Output {
	h.t.Helper()
	inv := &tool.Invocation{CallID: "c1", SessionID: "s1", Args: raw, Env: h.env, Paths: map[string]tool.ResolvedPath{}}
	for _, p := range paths {
		inv.Paths[p.Arg] = p
	}
	out, err := tl.Handler(ctx, inv)
	if err != nil {
		h.t.Fatalf("%s: handler error: %v", tl.Name, err)
	}
	if vs := tl.ValidateOutput(out.Data); vs != nil {
		h.t.Fatalf("%s: output invalid: %v (data %+v)", tl.Name, vs, out.Data)
	}
	data, _ := json.Marshal(out.Data)
	h.seen = append(h.seen, out.Content, out.ErrorMessage, string(data))
	return out
}

// wantDenied asserts a denial with code.
func (h *harness) wantDenied(r result, code string) {
	h.t.Helper()
	if !r.denied() || r.verdict.Code != code {
		h.t.Fatalf("want denial %s, got decision %s code %s (%s), output %+v", code, r.verdict.Decision, r.verdict.Code, r.verdict.Message, r.out)
	}
	if r.verdict.Message == "" {
		h.t.Errorf("denial %s has no message for the model", code)
	}
}

// wantOK asserts an allowed call that succeeded.
func (h *harness) wantOK(r result) *tool.Output {
	h.t.Helper()
	if r.denied() {
		h.t.Fatalf("denied %s: %s", r.verdict.Code, r.verdict.Message)
	}
	if r.out.Status != tool.StatusOK {
		h.t.Fatalf("failed %s: %s", r.out.ErrorCode, r.out.ErrorMessage)
	}
	return r.out
}

// wantFailed asserts an allowed call whose handler failed with code.
func (h *harness) wantFailed(r result, code string) *tool.Output {
	h.t.Helper()
	if r.denied() {
		h.t.Fatalf("denied %s (%s), want failure %s", r.verdict.Code, r.verdict.Message, code)
	}
	if r.out.Status != tool.StatusFailed || r.out.ErrorCode != code {
		h.t.Fatalf("status %q code %q (%s), want failed %s", r.out.Status, r.out.ErrorCode, r.out.ErrorMessage, code)
	}
	return r.out
}

// data decodes an output's Data into a map.
func data(t *testing.T, out *tool.Output) map[string]any {
	t.Helper()
	raw, err := json.Marshal(out.Data)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// exists reports whether a path relative to the scratch directory exists (or is a link).
func (h *harness) exists(rel string) bool {
	h.t.Helper()
	res := backendtest.Sh(h.t, h.env, fmt.Sprintf("cd %s && { [ -e '%s' ] || [ -L '%s' ]; }", h.scratch, rel, rel))
	return res.ExitCode == 0
}

// preview runs a tool's preview the way the approval step does: after policy, with its
// resolved paths, on the same environment as the handler.
func (h *harness) preview(name string, args map[string]any) string {
	h.t.Helper()
	raw, _ := json.Marshal(args)
	tl, ok := h.reg.Lookup(name)
	if !ok || tl.Preview == nil {
		h.t.Fatalf("tool %s has no preview", name)
	}
	refs, err := tl.Paths(raw)
	if err != nil {
		h.t.Fatalf("%s: paths: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, err := h.pol.Check(ctx, &pipeline.Request{Call: pipeline.Call{ID: "c1", Name: name, Arguments: raw}, Tool: tl, Args: raw,
		PathRefs: refs, Env: h.env, SessionID: "s1"})
	if err != nil || v.Decision != pipeline.Allow {
		h.t.Fatalf("%s: policy: %+v %v", name, v, err)
	}
	inv := &tool.Invocation{CallID: "c1", SessionID: "s1", Args: raw, Env: h.env, Paths: map[string]tool.ResolvedPath{}}
	for _, p := range v.Paths {
		inv.Paths[p.Arg] = p
	}
	out, err := tl.Preview(ctx, inv)
	if err != nil {
		h.t.Fatalf("%s: preview: %v", name, err)
	}
	return out
}
