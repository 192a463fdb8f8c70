package toolcall

import (
	"strings"

	"github.com/airlock-dev/airlock/pipeline"
)

// ToolMessage is an OpenAI chat `tool` role message: the answer to one tool call, ready to
// append to the conversation after the assistant message that made it.
type ToolMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// Messages answers each call with its tool message, in the calls' order.
func Messages(results []pipeline.Result) []ToolMessage {
	out := make([]ToolMessage, len(results))
	for i, r := range results {
		out[i] = ToolMessage{Role: "tool", ToolCallID: r.CallID, Content: Text(r)}
	}
	return out
}

// Text is what a model reads of a result: the content when the call succeeded; otherwise
// the status, code and reason first, then any content. The environment's notes (what was
// not enforced, what the backend said) follow, since the model reads nothing else.
func Text(res pipeline.Result) string {
	text := res.Content
	if res.Status != pipeline.StatusOK {
		text = string(res.Status) + " (" + res.ErrorCode + "): " + res.ErrorMessage
		if res.Content != "" && res.Content != res.ErrorMessage && res.Content != string(res.Status) {
			text += "\n" + res.Content
		}
	}
	if len(res.Metadata.Notes) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	for _, n := range res.Metadata.Notes {
		b.WriteString("[note] ")
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.String()
}
