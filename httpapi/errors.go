package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Stable error codes of the envelope. A client branches on these, never on the message.
const (
	CodeUnauthorized         = "unauthorized"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeSessionNotFound      = "session_not_found"
	CodeInvalidJSON          = "invalid_json"
	CodeUnknownField         = "unknown_field"
	CodeInvalidCalls         = "invalid_calls"
	CodeBodyTooLarge         = "body_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeShuttingDown         = "shutting_down"
	CodeSessionOpenFailed    = "session_open_failed"
	CodeInternal             = "internal"
	CodeInvalidQuery         = "invalid_query"
	CodeCallNotFound         = "call_not_found"
	CodeCallFinished         = "call_finished"
	CodeTooManyCalls         = "too_many_calls"
	CodeInvalidTTL           = "invalid_ttl"
	CodeTokenScope           = "token_scope"
	CodeInvalidPlan          = "invalid_plan"
)

// Codes lists every code of the envelope, for the documentation's test.
var Codes = []string{
	CodeUnauthorized, CodeNotFound, CodeMethodNotAllowed, CodeSessionNotFound, CodeInvalidJSON,
	CodeUnknownField, CodeInvalidCalls, CodeBodyTooLarge, CodeUnsupportedMediaType,
	CodeIdempotencyKeyReused, CodeShuttingDown, CodeSessionOpenFailed, CodeInternal,
	CodeInvalidQuery, CodeCallNotFound, CodeCallFinished, CodeTooManyCalls, CodeInvalidTTL, CodeTokenScope,
	CodeInvalidPlan,
}

// ErrorBody is the envelope of every failure.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	status, data := encodeJSON(status, v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// encodeJSON is the answer writeJSON writes: v's JSON and a newline, or an internal error
// when v cannot be encoded.
func encodeJSON(status int, v any) (int, []byte) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // json.Marshal's bytes, with the newline after them
	if err := enc.Encode(v); err != nil {
		return http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"the answer could not be encoded"}}` + "\n")
	}
	return status, buf.Bytes()
}
