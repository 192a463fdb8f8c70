package clientprobe

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// responses answers POST /v1/responses (Codex), streaming.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		s.fail(w, fmt.Errorf("openai: read: %w", err))
		return
	}
	req, err := parseResponses(body)
	if err != nil {
		s.fail(w, err)
		return
	}
	rep := s.reply(req)
	id := "resp_" + randomID()
	e := newSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	var item map[string]any
	if rep.Tool != "" && rep.Input != "" {
		item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + randomID(), "call_id": "call_" + randomID(),
			"name": rep.Tool, "input": rep.Input, "status": "completed"}
	} else if rep.Tool != "" {
		item = map[string]any{"type": "function_call", "id": "fc_" + randomID(), "call_id": "call_" + randomID(),
			"name": rep.Tool, "arguments": argsJSON(rep.Args), "status": "completed"}
		if rep.Namespace != "" {
			item["namespace"] = rep.Namespace
		}
	} else {
		item = map[string]any{"type": "message", "id": "msg_" + randomID(), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}}
	}
	e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	e.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "usage": map[string]int{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
}

type openaiTool struct {
	Type  string       `json:"type"`
	Name  string       `json:"name"`
	Tools []openaiTool `json:"tools"`
}

func parseResponses(body []byte) (Request, error) {
	var in struct {
		Tools []openaiTool `json:"tools"`
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Name   string          `json:"name"`
			Output json.RawMessage `json:"output"`
			Tools  []openaiTool    `json:"tools"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, fmt.Errorf("openai: decode request: %w", err)
	}
	req := Request{API: OpenAI, Body: body}
	add := func(tools []openaiTool) {
		for _, t := range tools {
			switch {
			case t.Type == "namespace":
				for _, sub := range t.Tools {
					req.Tools = append(req.Tools, t.Name+"."+sub.Name)
				}
			case t.Name != "":
				req.Tools = append(req.Tools, t.Name)
			default:
				req.Tools = append(req.Tools, t.Type) // a hosted tool: web_search
			}
		}
	}
	add(in.Tools)
	for _, it := range in.Input {
		switch it.Type {
		case "additional_tools": // tools Codex adds in the input for models it knows
			add(it.Tools)
		case "function_call", "custom_tool_call":
			req.Calls = append(req.Calls, Call{ID: it.CallID, Name: it.Name})
		case "function_call_output", "custom_tool_call_output":
			req.Results = append(req.Results, Result{CallID: it.CallID, Text: contentText(it.Output)})
		}
	}
	return req, nil
}
