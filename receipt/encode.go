package receipt

import (
	"strconv"
	"time"
)

// A ledger line is encoded for every event a call writes, twice for a call that runs, under
// the ledger's lock; encoding/json's reflection was most of that encoding's cost. appendLine
// writes the same bytes by hand. The chain depends on those bytes, so it never guesses: what
// it does not encode exactly as json.Marshal would (kept arguments, which json.Marshal
// compacts; a string that needs escaping; a time json refuses) makes it give up, and seal
// encodes that line with json.Marshal. TestAppendLineMatchesMarshal holds the two to the same
// bytes, for every field of Line and Receipt.

// appendLine appends ln as json.Marshal encodes it; ok is false when it cannot, and the bytes
// it returned are then to be thrown away.
func appendLine(b []byte, ln *Line) ([]byte, bool) {
	e := encoder{b: b, ok: true}
	e.open("")
	e.int("seq", ln.Seq)
	e.str("prev", ln.Prev)
	e.time("time", ln.Time)
	e.str("event", ln.Event)
	if ln.Receipt != nil {
		ln.Receipt.encode(&e)
	}
	if ln.Note != "" {
		e.str("note", ln.Note)
	}
	e.str("hash", ln.Hash)
	e.close()
	return e.b, e.ok
}

// encode writes r as the member "receipt" (see appendLine).
func (r *Receipt) encode(e *encoder) {
	if len(r.Arguments) > 0 {
		e.ok = false
		return
	}
	e.open("receipt")
	e.str("call_id", r.CallID)
	e.str("tool_name", r.ToolName)
	e.strOmit("session_id", r.SessionID)
	e.strOmit("job_id", r.JobID)
	e.str("arguments_sha256", r.ArgumentsSHA256)
	if c := r.Client; c != nil {
		e.open("client")
		e.strOmit("name", c.Name)
		e.strOmit("version", c.Version)
		e.strOmit("call_id", c.CallID)
		e.strOmit("caller", c.Caller)
		e.close()
	}
	e.str("decision", r.Decision)
	e.str("reason_code", r.ReasonCode)
	e.str("decided_by", r.DecidedBy)
	e.strOmit("risk", r.Risk)
	if len(r.Paths) > 0 {
		e.key("paths")
		e.b = append(e.b, '[')
		for i, p := range r.Paths {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.value(p)
		}
		e.b = append(e.b, ']')
	}
	e.boolean("dispatch_started", r.DispatchStarted)
	e.boolean("handler_started", r.HandlerStarted)
	e.str("outcome", string(r.Outcome))
	e.str("status", r.Status)
	e.strOmit("error_code", r.ErrorCode)
	if r.ExitCode != nil {
		e.int("exit_code", int64(*r.ExitCode))
	}
	e.strOmit("backend", r.Backend)
	e.time("received_at", r.ReceivedAt)
	e.timeOmit("decided_at", r.DecidedAt)
	e.timeOmit("started_at", r.StartedAt)
	e.timeOmit("finished_at", r.FinishedAt)
	if n := r.Network; n != nil {
		e.open("network")
		e.str("host", n.Host)
		e.int("port", int64(n.Port))
		e.str("reason", n.Reason)
		e.strOmit("detail", n.Detail)
		e.str("by", n.By)
		e.strOmit("unattributed", n.Unattributed)
		e.close()
	}
	e.close()
}

// encoder appends one JSON object's members, nested objects included. ok turns false at the
// first value it cannot write as json.Marshal would; the rest is then wasted work.
type encoder struct {
	b     []byte
	ok    bool
	first bool // the next member is the first of its object
}

// open starts an object, as the member key of the object being written unless key is "".
func (e *encoder) open(key string) {
	if key != "" {
		e.key(key)
	}
	e.b = append(e.b, '{')
	e.first = true
}

func (e *encoder) close() {
	e.b = append(e.b, '}')
	e.first = false
}

func (e *encoder) key(k string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

func (e *encoder) str(k, v string) {
	e.key(k)
	e.value(v)
}

// strOmit is a string member tagged omitempty.
func (e *encoder) strOmit(k, v string) {
	if v != "" {
		e.str(k, v)
	}
}

// value writes a string that needs no escaping, quoted; any other string (a quote, a
// backslash, a control character, <, > or &, which json.Marshal escapes for HTML, or
// anything outside printable ASCII, where it also checks UTF-8) is left to json.Marshal.
func (e *encoder) value(v string) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			e.ok = false
			return
		}
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, v...)
	e.b = append(e.b, '"')
}

func (e *encoder) boolean(k string, v bool) {
	e.key(k)
	e.b = strconv.AppendBool(e.b, v)
}

func (e *encoder) int(k string, v int64) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, v, 10)
}

// time writes t as time.Time's MarshalJSON does: RFC 3339 with nanoseconds, refused (left to
// json.Marshal, which fails) for a year outside 0-9999 or a zone hour outside 0-23.
func (e *encoder) time(k string, t time.Time) {
	e.key(k)
	e.b = append(e.b, '"')
	n0 := len(e.b)
	e.b = t.AppendFormat(e.b, time.RFC3339Nano)
	s := e.b[n0:]
	if len(s) < len("2006-01-02T15:04:05Z") || s[4] != '-' {
		e.ok = false
	} else if s[len(s)-1] != 'Z' {
		z := s[len(s)-len("+07:00"):]
		if (z[0] != '+' && z[0] != '-') || 10*(z[1]-'0')+(z[2]-'0') >= 24 {
			e.ok = false
		}
	}
	e.b = append(e.b, '"')
}

// timeOmit is a *time.Time member tagged omitempty.
func (e *encoder) timeOmit(k string, t *time.Time) {
	if t != nil {
		e.time(k, *t)
	}
}
