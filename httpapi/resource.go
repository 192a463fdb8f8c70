package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/airlock-dev/airlock/pipeline"
)

// The resource routes (jobs, files) are tool calls under another name: each request is one
// call of a tool through the session's pipeline — schema, policy, approval, handler and a
// receipt naming the caller — never a side road to the manager or the filesystem. These
// functions turn the call's result into an HTTP answer.

// ToolFailure is the envelope of a resource request whose call did not succeed: the error
// of every failure, with the call's result (its receipt among it) beside it.
type ToolFailure struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result pipeline.Result `json:"result"`
}

// statusOfCode maps a result's code to the HTTP status of its answer, where the code says
// more than the result's status does.
var statusOfCode = map[string]int{
	"job_not_found":              http.StatusNotFound,
	"job_no_input":               http.StatusConflict,
	pipeline.CodeUnknownTool:     http.StatusNotFound,
	pipeline.CodeApprovalPending: http.StatusAccepted,
	"stale_file":                 http.StatusPreconditionFailed,
	"file_not_found":             http.StatusNotFound,
	"not_found":                  http.StatusNotFound,
	"too_large":                  http.StatusRequestEntityTooLarge,
}

// statusOfResult is the HTTP status of a resource request whose call ended with res.
func statusOfResult(res pipeline.Result) int {
	if res.Status == pipeline.StatusOK {
		return http.StatusOK
	}
	if st, ok := statusOfCode[res.ErrorCode]; ok {
		return st
	}
	switch res.Status {
	case pipeline.StatusDenied, pipeline.StatusBlocked:
		return http.StatusForbidden
	case pipeline.StatusTimeout:
		return http.StatusGatewayTimeout
	case pipeline.StatusCancelled, pipeline.StatusInterrupted:
		return http.StatusConflict
	}
	return http.StatusUnprocessableEntity
}

// callTool runs one call of name with args on the caller's session and returns its result.
func (s *Server) callTool(r *http.Request, e *entry, name string, args any) pipeline.Result {
	raw, err := json.Marshal(args)
	if err != nil {
		return pipeline.Result{ToolName: name, Status: pipeline.StatusFailed, ErrorCode: CodeInternal,
			ErrorMessage: "the arguments could not be encoded: " + err.Error()}
	}
	cs := &callerSession{Session: e.sess, caller: Caller(r.Context()), s: s, e: e}
	return cs.Run(r.Context(), pipeline.Call{ID: newCallID(), Name: name, Arguments: raw})
}

// answerTool writes a JSON resource answer: the result on success (or while it waits for a
// person, 202), else the envelope with the result's code and the result beside it.
func answerTool(w http.ResponseWriter, res pipeline.Result) {
	w.Header().Set("Airlock-Call-Id", res.CallID)
	st := statusOfResult(res)
	if st < 300 {
		writeJSON(w, st, res)
		return
	}
	var f ToolFailure
	f.Error.Code, f.Error.Message, f.Result = res.ErrorCode, res.ErrorMessage, res
	writeJSON(w, st, f)
}

// newCallID names a call the API made for a resource request: unique, unlike the ID the
// pipeline derives from a call's arguments, since the same GET repeats them.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "http_" + hex.EncodeToString(b[:])
}
