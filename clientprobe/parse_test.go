package clientprobe

import (
	"slices"
	"testing"
)

// What the script sees of a request: the tools offered (an OpenAI namespace's as NS.TOOL,
// including Codex's additional_tools), the calls made and the text each result carried.
func TestParse(t *testing.T) {
	t.Parallel()
	a, err := parseMessages([]byte(`{"tools":[{"name":"Bash"},{"name":"mcp__airlock__terminal"}],"messages":[
	 {"role":"user","content":"go"},
	 {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"mcp__airlock__terminal","input":{}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"hi\n"}],"is_error":true}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Tools, []string{"Bash", "mcp__airlock__terminal"}) || len(a.Calls) != 1 || a.Calls[0].ID != "toolu_1" {
		t.Fatalf("anthropic: %+v", a)
	}
	if r, ok := a.Last(); !ok || r.Text != "hi\n" || !r.IsError || r.CallID != "toolu_1" {
		t.Fatalf("anthropic result: %+v", r)
	}
	o, err := parseResponses([]byte(`{"tools":[{"type":"function","name":"list_mcp_resources"},{"type":"web_search"},
	 {"type":"namespace","name":"mcp__airlock","tools":[{"type":"function","name":"terminal"}]}],"input":[
	 {"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"}]}]},
	 {"type":"function_call","call_id":"call_1","name":"terminal","arguments":"{}"},
	 {"type":"function_call_output","call_id":"call_1","output":"Output:hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"list_mcp_resources", "web_search", "mcp__airlock.terminal", "functions.exec"}
	if !slices.Equal(o.Tools, want) || len(o.Calls) != 1 {
		t.Fatalf("openai: %+v, want tools %v", o, want)
	}
	if r, _ := o.Last(); r.Text != "Output:hi" || r.CallID != "call_1" {
		t.Fatalf("openai result: %+v", r)
	}
	if _, err := parseMessages([]byte(`{`)); err == nil {
		t.Fatal("a broken request was read")
	}
}
