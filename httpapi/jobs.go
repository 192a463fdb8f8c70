package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/airlock-dev/airlock/jobs"
	"github.com/airlock-dev/airlock/pipeline"
)

// The job routes are the job tools: GET …/jobs is job_list, GET …/jobs/{job_id} the one
// job of job_list, GET …/output job_output by offset, DELETE job_kill, POST …/input
// job_input. Each is a call with a receipt, decided and approved as the tool is.

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	answerTool(w, s.callTool(r, e, jobs.ListTool, struct{}{}))
}

// getJob answers the job's entry of a job_list call.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	res := s.callTool(r, e, jobs.ListTool, struct{}{})
	if res.Status != pipeline.StatusOK {
		answerTool(w, res)
		return
	}
	id := r.PathValue("job_id")
	for _, in := range jobsOf(res) {
		if in.ID == id {
			w.Header().Set("Airlock-Call-Id", res.CallID)
			writeJSON(w, http.StatusOK, in)
			return
		}
	}
	var f ToolFailure
	f.Error.Code, f.Error.Message, f.Result = "job_not_found", fmt.Sprintf("no job %q in this session", id), res
	w.Header().Set("Airlock-Call-Id", res.CallID)
	writeJSON(w, http.StatusNotFound, f)
}

// jobsOf reads job_list's data, whichever form the pipeline kept it in.
func jobsOf(res pipeline.Result) []jobs.Info {
	raw, err := json.Marshal(res.Data)
	if err != nil {
		return nil
	}
	var d struct {
		Jobs []jobs.Info `json:"jobs"`
	}
	_ = json.Unmarshal(raw, &d)
	return d.Jobs
}

// jobOutput is GET …/jobs/{job_id}/output?offset=N&max_bytes=M: job_output by offset.
func (s *Server) jobOutput(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	args := map[string]any{"job_id": r.PathValue("job_id"), "offset": int64(0)}
	for _, q := range []string{"offset", "max_bytes"} {
		v := r.URL.Query().Get(q)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, CodeInvalidQuery, fmt.Sprintf("%s=%q: a whole number of bytes, 0 or more", q, v))
			return
		}
		args[q] = n
	}
	answerTool(w, s.callTool(r, e, jobs.OutputTool, args))
}

func (s *Server) killJob(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	answerTool(w, s.callTool(r, e, jobs.KillTool, map[string]string{"job_id": r.PathValue("job_id")}))
}

// jobInput is POST …/jobs/{job_id}/input with {"data": "...", "eof": false}: job_input.
func (s *Server) jobInput(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Data string `json:"data"`
		EOF  bool   `json:"eof"`
	}
	if err := decodeStrict(body, &req); err != nil {
		writeDecodeError(w, err)
		return
	}
	answerTool(w, s.callTool(r, e, jobs.InputTool, map[string]any{"job_id": r.PathValue("job_id"), "data": req.Data, "eof": req.EOF}))
}
