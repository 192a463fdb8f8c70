package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/mcpserver"
	"github.com/airlock-dev/airlock/pipeline"
)

// With terminal's output policy summary_only, the model-facing text is a summary (size,
// first and last line, exit code) while the caller gets the whole output: in the result, in
// the call's result fetched again by id, and over MCP in the result's _meta.
func TestSummaryOnlyOutput(t *testing.T) {
	f := newFixture(t, "[tools]\noutput_mode = { terminal = \"summary_only\" }\n")
	si := f.session(t, aliceToken)
	var whole strings.Builder
	for i := 1; i <= 500; i++ {
		whole.WriteString("line-" + itoa(i) + "\n")
	}
	cmd := `i=1; while [ $i -le 500 ]; do echo line-$i; i=$((i+1)); done`
	var res pipeline.Result
	f.do(t, "POST", "/v1/sessions/"+si.ID+"/calls", aliceToken,
		`{"name":"terminal","call_id":"sum-1","arguments":{"command":`+quote(cmd)+`}}`).decode(t, &res)
	if res.Status != pipeline.StatusOK || res.Output != whole.String() {
		t.Fatalf("status %s, output %d bytes, want %d (%.200q)", res.Status, len(res.Output), whole.Len(), res.Output)
	}
	for _, want := range []string{"[summary_only]", "500 lines", "exit code 0", `first line: "line-1"`, `last line: "line-500"`} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("summary lacks %q:\n%s", want, res.Content)
		}
	}
	if strings.Contains(res.Content, "line-250") {
		t.Errorf("the model's text holds the output's middle:\n%s", res.Content)
	}
	var again struct {
		Result *pipeline.Result `json:"result"`
	}
	f.do(t, "GET", "/v1/sessions/"+si.ID+"/calls/sum-1", aliceToken, "").decode(t, &again)
	if again.Result == nil || again.Result.Output != whole.String() {
		t.Errorf("the call fetched by id lacks its whole output: %+v", again.Result)
	}
	// MCP: the text the model reads is the summary; _meta carries the whole output.
	cs := f.mcpClient(t, aliceToken)
	text, st := callText(t, cs, "terminal", map[string]any{"command": cmd})
	if !strings.HasPrefix(text, "[summary_only]") || strings.Contains(text, "line-250") {
		t.Errorf("MCP text:\n%s", text)
	}
	if out, _ := st["output"].(string); out != whole.String() {
		t.Errorf("MCP _meta[%s].output: %d bytes, want %d", mcpserver.ResultMetaKey, len(out), whole.Len())
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
