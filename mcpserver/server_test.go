package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/airlock-dev/airlock/internal/proctest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/mcpserver"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/tool"
)

type result struct {
	text string
	st   map[string]any
	err  bool
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return decode(t, res)
}

func decode(t *testing.T, res *mcp.CallToolResult) result {
	t.Helper()
	var r result
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		// Claude Code and Codex would show the model this object instead of the text.
		t.Fatalf("result carries structuredContent: %v", res.StructuredContent)
	}
	b, _ := json.Marshal(res.Meta[mcpserver.ResultMetaKey])
	_ = json.Unmarshal(b, &r.st)
	r.err = res.IsError
	return r
}

func (r result) status() string { s, _ := r.st["status"].(string); return s }
func (r result) code() string   { s, _ := r.st["error_code"].(string); return s }
func (r result) str(k string) string {
	s, _ := r.st[k].(string)
	return s
}

func TestListsToolsWithAnnotations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	cs := f.connect(t, nil)
	lt, err := cs.ListTools(context.Background(), nil)
	must(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tl := range lt.Tools {
		byName[tl.Name] = tl
	}
	for _, n := range []string{"terminal", "read_file", "write_file", "patch", "search_files", "job_output", "job_wait", "job_list", "job_kill", "approval_wait"} {
		if byName[n] == nil {
			t.Fatalf("tool %s not listed; have %v", n, lt.Tools)
		}
		if byName[n].Annotations == nil {
			t.Errorf("%s has no annotations", n)
		}
	}
	if !byName["read_file"].Annotations.ReadOnlyHint || *byName["read_file"].Annotations.DestructiveHint {
		t.Errorf("read_file annotations %+v", byName["read_file"].Annotations)
	}
	if byName["terminal"].Annotations.ReadOnlyHint || !*byName["terminal"].Annotations.DestructiveHint {
		t.Errorf("terminal annotations %+v", byName["terminal"].Annotations)
	}
	schema, _ := json.Marshal(byName["terminal"].InputSchema)
	if !strings.Contains(string(schema), `"background"`) {
		t.Errorf("terminal schema %s", schema)
	}
}

func TestFileToolsAndCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	cs := f.connect(t, nil)

	if r := call(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "one\ntwo\n"}); r.err || r.status() != "ok" {
		t.Fatalf("write: %+v", r)
	}
	if r := call(t, cs, "read_file", map[string]any{"path": "a.txt"}); r.err || !strings.Contains(r.text, "two") {
		t.Fatalf("read: %+v", r)
	}
	if r := call(t, cs, "patch", map[string]any{"path": "a.txt", "old_string": "two", "new_string": "three"}); r.err {
		t.Fatalf("patch: %+v", r)
	}
	if r := call(t, cs, "search_files", map[string]any{"pattern": "three"}); r.err || !strings.Contains(r.text, "a.txt") {
		t.Fatalf("search: %+v", r)
	}
	r := call(t, cs, "terminal", map[string]any{"command": "cat a.txt; exit 3"})
	if r.err || r.status() != "ok" || r.st["exit_code"] != float64(3) || !strings.Contains(r.text, "three") {
		t.Fatalf("terminal: %+v", r)
	}
	if r.str("receipt_id") == "" || len(r.str("receipt_sha256")) != 64 {
		t.Fatalf("receipt fields: %+v", r.st)
	}
	// A refusal is a result the model reads, never a protocol error.
	r = call(t, cs, "terminal", map[string]any{"command": "rm -rf /"})
	if !r.err || r.code() != "hard_deny" || !strings.Contains(r.text, "hard_deny") {
		t.Fatalf("dangerous command: %+v", r)
	}
	r = call(t, cs, "read_file", map[string]any{"path": "../../etc/passwd"})
	if !r.err || r.code() != "outside_roots" {
		t.Fatalf("outside roots: %+v", r)
	}
	r = call(t, cs, "terminal", map[string]any{"command": 7})
	if !r.err || r.code() != "input_validation_failed" {
		t.Fatalf("bad arguments: %+v", r)
	}
}

// The Go SDK client speaks protocol 2026-07-28: the approval comes back as an input
// request, the client's elicitation handler answers it, and the retried call runs.
func TestElicitationApproveOnceAndDenyWithMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	var mu sync.Mutex
	answer := map[string]any{"decision": "approve_once"}
	var asked []string
	cs := f.connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
	}})
	r := call(t, cs, "terminal", map[string]any{"command": "node -e 1 2>/dev/null; echo ran > ran.txt; echo done"})
	if r.err || r.status() != "ok" || !strings.Contains(r.str("decided_by"), "person:elicitation") {
		t.Fatalf("approved call: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "ran.txt")); err != nil {
		t.Fatal("approved command did not run")
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "node -e 1") || !strings.Contains(asked[0], "risk:") {
		t.Fatalf("person was shown %q", asked)
	}
	answer = map[string]any{"decision": "deny", "message": "use npm test instead"}
	mu.Unlock()
	r = call(t, cs, "terminal", map[string]any{"command": "node -e 2; echo ran > ran2.txt"})
	if !r.err || r.code() != "denied_by_person" || !strings.Contains(r.text, "use npm test instead") {
		t.Fatalf("denied call: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "ran2.txt")); err == nil {
		t.Fatal("denied command ran")
	}
}

// The question records what a person must see: the command, backend, risk and reasons.
func TestPendingRecordShowsCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	cs := f.connect(t, nil)
	r := call(t, cs, "terminal", map[string]any{"command": "node -e 3"})
	if r.status() != mcpStatusPending {
		t.Fatalf("no elicitation: want approval_pending, got %+v", r)
	}
	rec, err := f.store.Get(r.str("approval_id"))
	must(t, err)
	if rec.Summary != "node -e 3" || rec.Backend != "local" || rec.Risk != "exec" || len(rec.Reasons) == 0 || rec.Workdir != f.ws {
		t.Fatalf("record %+v", rec)
	}
}

const mcpStatusPending = "approval_pending"

// A client that cannot elicit gets approval_pending at once; the answer arrives in the store
// (from airlock approvals in another process, here the store itself) and approval_wait
// returns the call's result.
func TestPendingThenApprovalWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	cs := f.connect(t, nil)
	r := call(t, cs, "terminal", map[string]any{"command": "node -e 4 2>/dev/null; echo approved-run"})
	if !r.err || r.status() != mcpStatusPending || r.str("approval_id") == "" || !strings.Contains(r.text, "approval_wait") {
		t.Fatalf("pending: %+v", r)
	}
	id := r.str("approval_id")
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = f.store.Decide(id, true, pending.Once, "cli", "")
	}()
	r = call(t, cs, "approval_wait", map[string]any{"approval_id": id})
	if r.err || r.status() != "ok" || !strings.Contains(r.text, "approved-run") || !strings.Contains(r.str("decided_by"), "person:cli") {
		t.Fatalf("after approval: %+v", r)
	}
	// Used once: waiting again does not run it again.
	if r := call(t, cs, "approval_wait", map[string]any{"approval_id": id}); !r.err || r.code() != "approval_used" {
		t.Fatalf("second wait: %+v", r)
	}
}

// An approval nobody answers expires as a denial and the call never runs.
func TestPendingExpiresAsDenial(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{ttl: 300 * time.Millisecond})
	cs := f.connect(t, nil)
	r := call(t, cs, "terminal", map[string]any{"command": "node -e 5; touch expired-ran"})
	if r.status() != mcpStatusPending {
		t.Fatalf("pending: %+v", r)
	}
	r = call(t, cs, "approval_wait", map[string]any{"approval_id": r.str("approval_id")})
	if !r.err || r.code() != "approval_expired" || r.str("decided_by") != "approval:expired" {
		t.Fatalf("expired: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "expired-ran")); err == nil {
		t.Fatal("expired approval ran")
	}
}

func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	var mu sync.Mutex
	var msgs []string
	cs := f.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		msgs = append(msgs, req.Params.Message)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.25; done"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	must(t, err)
	if r := decode(t, res); r.err || !strings.Contains(r.text, "tick 6") {
		t.Fatalf("result %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) < 2 || !strings.Contains(strings.Join(msgs, "\n"), "tick 1") {
		t.Fatalf("progress messages %q", msgs)
	}
}

// Cancelling a call kills the command's tree; the receipt says interrupted.
func TestCancelKillsTree(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	cs := f.connect(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "sleep 300 & echo \"$! $(readlink /proc/self/ns/pid)\" > bg.pid; sleep 300"}})
	}()
	pid := waitPid(t, filepath.Join(f.ws, "bg.pid"))
	cancel()
	<-done
	assertGone(t, pid)
	waitLedger(t, f.ledger, func(l receipt.Line) bool {
		return l.Event == receipt.EventCompleted && l.Receipt.ToolName == "terminal" && l.Receipt.Outcome == receipt.Interrupted && l.Receipt.HandlerStarted
	})
}

func TestBackgroundJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	cs := f.connect(t, nil)
	r := call(t, cs, "terminal", map[string]any{"background": true,
		"command": "i=0; while [ $i -lt 40 ]; do echo line $i; i=$((i+1)); sleep 0.02; done"})
	var job string
	if d, ok := r.st["data"].(map[string]any); ok {
		job, _ = d["job_id"].(string)
	}
	if r.err || job == "" {
		t.Fatalf("start: %+v", r)
	}
	time.Sleep(200 * time.Millisecond)
	first := call(t, cs, "job_output", map[string]any{"job_id": job})
	wait := call(t, cs, "job_wait", map[string]any{"job_id": job, "timeout": 10})
	if wait.err {
		t.Fatalf("wait: %+v", wait)
	}
	data := wait.st["data"].(map[string]any)
	if data["state"] != "exited" || data["exit_code"] != float64(0) {
		t.Fatalf("wait data %+v", data)
	}
	all := outputLines(first.text) + outputLines(wait.text)
	var want strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if all != want.String() {
		t.Fatalf("output read twice:\n%q\nwant\n%q", all, want.String())
	}

	r = call(t, cs, "terminal", map[string]any{"background": true, "command": "echo \"$$ $(readlink /proc/self/ns/pid)\" > job.pid; exec sleep 300"})
	other := r.st["data"].(map[string]any)["job_id"].(string)
	pid := waitPid(t, filepath.Join(f.ws, "job.pid"))
	if l := call(t, cs, "job_list", nil); !strings.Contains(l.text, other) || !strings.Contains(l.text, "running") {
		t.Fatalf("list: %+v", l)
	}
	k := call(t, cs, "job_kill", map[string]any{"job_id": other})
	if k.err || k.st["data"].(map[string]any)["state"] != "killed" {
		t.Fatalf("kill: %+v", k)
	}
	assertGone(t, pid)
	waitLedger(t, f.ledger, func(l receipt.Line) bool {
		return l.Event == receipt.EventJobEnded && l.Receipt.JobID == other && l.Receipt.Outcome == receipt.Interrupted
	})
}

// outputLines strips the status line job_output adds after the output.
func outputLines(text string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(text, "\n") {
		if l == "" || strings.HasPrefix(l, "[job ") {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

// waitPid waits for a command to record a process as proctest.Record spells it, and for
// that process to be found running from the host; it returns the record.
func waitPid(t *testing.T, path string) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if b, err := os.ReadFile(path); err == nil && len(strings.Fields(string(b))) == 2 {
			if _, alive := proctest.Alive(string(b)); alive {
				return string(b)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no running process recorded in %s", path)
	return ""
}

// assertGone waits for the recorded process to end (a zombie counts as ended).
func assertGone(t *testing.T, rec string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if _, alive := proctest.Alive(rec); !alive {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid, _ := proctest.Alive(rec)
	t.Fatalf("process %s (host PID %d) still alive", strings.TrimSpace(rec), pid)
}

func waitLedger(t *testing.T, path string, match func(receipt.Line) bool) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if fh, err := os.Open(path); err == nil {
			lines, _ := receipt.ReadAll(fh)
			fh.Close()
			for _, l := range lines {
				if l.Receipt != nil && match(l) {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("ledger line not found")
}

// A write that needs a person shows them the diff of the change.
func TestElicitationShowsWriteDiff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{config: "[approvals]\nallow_write = false\n"})
	must(t, os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("keep\nold line\n"), 0o644))
	var shown string
	cs := f.connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		shown = req.Params.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve_once"}}, nil
	}})
	r := call(t, cs, "write_file", map[string]any{"path": "notes.txt", "content": "keep\nnew line\n"})
	if r.err || r.status() != "ok" {
		t.Fatalf("write: %+v", r)
	}
	for _, want := range []string{"--- a/notes.txt", " keep", "-old line", "+new line", "risk:     write", "backend:  local"} {
		if !strings.Contains(shown, want) {
			t.Fatalf("person was shown %q, missing %q", shown, want)
		}
	}
}

// [tools] enabled decides what is listed; a tool whose program is missing is not listed,
// and Check says why.
func TestToolsetsAndNeeds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{config: "[tools]\nenabled = [\"files\"]\n"})
	cs := f.connect(t, nil)
	lt, err := cs.ListTools(context.Background(), nil)
	must(t, err)
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "approval_wait,patch,read_bytes,read_file,search_files,write_bytes,write_file" {
		t.Fatalf("listed %s", got)
	}

	env, err := local.New(local.Config{Workspace: t.TempDir()})
	must(t, err)
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	reg := tool.NewRegistry()
	for _, d := range []tool.Definition{
		{Name: "needs_missing", Toolset: "terminal", Needs: []tool.Need{{Programs: []string{"airlock-no-such-program"}, Why: "it runs it"}}},
		{Name: "needs_sh", Toolset: "terminal", Needs: []tool.Need{{Programs: []string{"airlock-no-such-program", "sh"}}}},
		{Name: "web_thing", Toolset: "web"},
		{Name: "not_allowed", Toolset: "files"},
	} {
		d.Risk, d.InputSchema = tool.RiskRead, json.RawMessage(`{"type":"object"}`)
		d.Handler = func(context.Context, *tool.Invocation) (*tool.Output, error) { return nil, nil }
		must(t, reg.Register(d))
	}
	got := map[string]mcpserver.Availability{}
	for _, a := range mcpserver.Check(context.Background(), reg, env, []string{"terminal", "files"}, []string{"needs_missing", "needs_sh", "web_thing"}) {
		got[a.Name] = a
	}
	if a := got["needs_missing"]; a.Listed || !strings.Contains(a.Why, "airlock-no-such-program") || !strings.Contains(a.Why, "it runs it") {
		t.Errorf("needs_missing: %+v", a)
	}
	if a := got["needs_sh"]; !a.Listed {
		t.Errorf("needs_sh: %+v", a)
	}
	if a := got["web_thing"]; a.Listed || !strings.Contains(a.Why, `toolset "web"`) {
		t.Errorf("web_thing: %+v", a)
	}
	if a := got["not_allowed"]; a.Listed || !strings.Contains(a.Why, "allowed_tools") {
		t.Errorf("not_allowed: %+v", a)
	}
}

// A foreground command still running after [jobs] promote_after comes back with its output
// so far and a job ID, and goes on as a job.
func TestLongForegroundCommandBecomesAJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{config: "[jobs]\npromote_after = \"1s\"\nmax_wait = \"10s\"\n"})
	cs := f.connect(t, nil)
	r := call(t, cs, "terminal", map[string]any{"command": "echo started; sleep 3; echo finished"})
	data, _ := r.st["data"].(map[string]any)
	if r.err || data["background"] != true || !strings.Contains(r.text, "started") || !strings.Contains(r.text, "moved to background job") {
		t.Fatalf("promoted: %+v", r)
	}
	job, _ := data["job_id"].(string)
	w := call(t, cs, "job_wait", map[string]any{"job_id": job})
	if wd := w.st["data"].(map[string]any); wd["state"] != "exited" || !strings.Contains(w.text, "finished") || strings.Contains(w.text, "started") {
		t.Fatalf("after promotion: %+v", w)
	}
	waitLedger(t, f.ledger, func(l receipt.Line) bool { return l.Event == receipt.EventJobEnded && l.Receipt.JobID == job })
}

// An approval left unused for longer than the TTL is not applied to a late call: the person
// is asked again.
func TestStaleApprovalIsAskedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{ttl: 300 * time.Millisecond})
	cs := f.connect(t, nil)
	args := map[string]any{"command": "node -e 6 2>/dev/null; touch late.txt"}
	r := call(t, cs, "terminal", args)
	if r.status() != mcpStatusPending {
		t.Fatalf("pending: %+v", r)
	}
	first := r.str("approval_id")
	if _, err := f.store.Decide(first, true, pending.Once, "cli", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	r = call(t, cs, "terminal", args)
	if r.status() != mcpStatusPending || r.str("approval_id") == first {
		t.Fatalf("late call: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "late.txt")); err == nil {
		t.Fatal("a stale approval ran the call")
	}
}

// Declining the elicitation is a denial; cancelling it is no answer: the call stays pending
// and can be answered later.
func TestElicitationDeclineAndCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	var mu sync.Mutex
	action := "decline"
	cs := f.connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		return &mcp.ElicitResult{Action: action}, nil
	}})
	r := call(t, cs, "terminal", map[string]any{"command": "node -e 7; touch declined.txt"})
	if !r.err || r.code() != "denied_by_person" || !strings.Contains(r.str("decided_by"), "person:elicitation") {
		t.Fatalf("declined: %+v", r)
	}
	mu.Lock()
	action = "cancel"
	mu.Unlock()
	r = call(t, cs, "terminal", map[string]any{"command": "node -e 8; touch cancelled.txt"})
	if r.status() != mcpStatusPending || r.str("approval_id") == "" {
		t.Fatalf("cancelled: %+v", r)
	}
	if rec, err := f.store.Get(r.str("approval_id")); err != nil || rec.State != pending.Pending {
		t.Fatalf("cancelled approval: %+v %v", rec, err)
	}
	for _, name := range []string{"declined.txt", "cancelled.txt"} {
		if _, err := os.Stat(filepath.Join(f.ws, name)); err == nil {
			t.Fatalf("%s: the call ran", name)
		}
	}
}

// The receipt names the client (from initialize) and the client's own id for the call (from
// the request's _meta), so that a person can join the client's transcript to the ledger; the
// model-facing result carries the output in its text and no structuredContent.
func TestReceiptNamesTheClientsCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	cs := f.connect(t, nil)
	for _, tc := range []struct{ key, id string }{
		{"claudecode/toolUseId", "toolu_01Marker"},
		{"codex/callId", "call_marker_2"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Meta: mcp.Meta{tc.key: tc.id}, Name: "terminal", Arguments: map[string]any{"command": "echo marker-" + tc.id},
		})
		must(t, err)
		r := decode(t, res)
		if r.err || !strings.Contains(r.text, "marker-"+tc.id) {
			t.Fatalf("%s: %+v", tc.key, r)
		}
		waitLedger(t, f.ledger, func(l receipt.Line) bool {
			c := l.Receipt.Client
			return l.Event == receipt.EventCompleted && c != nil && c.CallID == tc.id && c.Name == "airlock-test" && c.Version == "1"
		})
	}
}
