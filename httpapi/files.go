package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
)

// The file routes are the byte tools: GET and HEAD are read_bytes, PUT is write_bytes, each
// one call through the session's pipeline — the path policy (a refused path gets the same
// reason code as read_file or write_file), approval, a receipt naming the caller. The ETag
// is the content's SHA-256; If-Match on PUT is the write's stale_file precondition.

type bytesResult struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Content string `json:"content_base64"`
	Action  string `json:"action"`
}

func dataOf(res pipeline.Result) (bytesResult, error) {
	var d bytesResult
	raw, err := json.Marshal(res.Data)
	if err != nil {
		return d, err
	}
	return d, json.Unmarshal(raw, &d)
}

// getFile is GET and HEAD /v1/sessions/{id}/files/{path...}: the file's bytes as they are.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	head := r.Method == http.MethodHead
	res := s.callTool(r, e, fileops.ReadBytes, map[string]any{"path": r.PathValue("path"), "head": head})
	if res.Status != pipeline.StatusOK {
		answerTool(w, res)
		return
	}
	d, err := dataOf(res)
	data, derr := base64.StdEncoding.DecodeString(d.Content)
	if err != nil || derr != nil {
		writeError(w, http.StatusInternalServerError, CodeInternal, "read_bytes answered what is not bytes")
		return
	}
	w.Header().Set("Airlock-Call-Id", res.CallID)
	w.Header().Set("ETag", `"`+d.SHA256+`"`)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(d.Size, 10))
	w.WriteHeader(http.StatusOK)
	if !head {
		_, _ = w.Write(data)
	}
}

// putFile is PUT /v1/sessions/{id}/files/{path...}: the body replaces the file whole,
// atomically. A body over [policy] max_write_bytes is 413 before any call is made.
func (s *Server) putFile(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	limit := s.opts.Engine.Config().Policy.MaxWriteBytes
	if limit <= 0 {
		limit = pathpolicy.DefaultMaxWriteBytes
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
				fmt.Sprintf("the file is larger than %d bytes, the limit of one write ([policy] max_write_bytes); nothing was written", limit))
			return
		}
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "the body could not be read: "+err.Error())
		return
	}
	args := map[string]any{"path": r.PathValue("path"), "content_base64": base64.StdEncoding.EncodeToString(body)}
	if m := r.Header.Get("If-Match"); m != "" {
		sum := strings.Trim(strings.TrimPrefix(m, "W/"), `"`)
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			writeError(w, http.StatusBadRequest, CodeInvalidQuery, fmt.Sprintf("If-Match %q: give the ETag this server sent, the file's SHA-256 in quotes", m))
			return
		}
		args["if_sha256"] = sum
	}
	res := s.callTool(r, e, fileops.WriteBytes, args)
	if res.Status != pipeline.StatusOK {
		answerTool(w, res)
		return
	}
	d, _ := dataOf(res)
	w.Header().Set("ETag", `"`+d.SHA256+`"`)
	st := http.StatusOK
	if d.Action == "created" {
		st = http.StatusCreated
	}
	w.Header().Set("Airlock-Call-Id", res.CallID)
	writeJSON(w, st, res)
}
