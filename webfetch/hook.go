package webfetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
	"github.com/airlock-dev/airlock/urlguard"
)

// Hook refuses a web_fetch call whose URL the guard blocks before anything else looks at
// it: as a policy step ([Hook.Check]) it decides before approval, so that a person is never
// asked about a fetch the guard would refuse, and the receipt says the call was denied (code
// network_denied), not that it ran and failed. As a pre-hook ([Hook.Before]) it checks again
// just before the handler; the handler checks with every redirect and at connect time.
type Hook struct {
	Guard    *urlguard.Guard
	OnDenied func(Denial)
}

var (
	_ pipeline.PreHook = (*Hook)(nil)
	_ pipeline.Policy  = (*Hook)(nil)
)

// Name names the hook in receipts.
func (h *Hook) Name() string { return "urlguard" }

// Check is the guard as a policy step: a web_fetch call whose URL it blocks is denied,
// every other call allowed (the path policy decides those).
func (h *Hook) Check(ctx context.Context, req *pipeline.Request) (pipeline.Verdict, error) {
	b, err := h.Before(ctx, req)
	if err != nil || b == nil {
		return pipeline.Verdict{Decision: pipeline.Allow, DecidedBy: "urlguard"}, err
	}
	return pipeline.Verdict{Decision: pipeline.Deny, Code: b.Code, Message: b.Message, Retryable: b.Retryable, DecidedBy: "pre_hook:urlguard", Block: true}, nil
}

// Before checks the url argument of web_fetch calls and lets every other call through.
func (h *Hook) Before(ctx context.Context, req *pipeline.Request) (*pipeline.Block, error) {
	if req.Tool == nil || req.Tool.Name != Name {
		return nil, nil
	}
	a, err := parseArgs(req.Args)
	if err != nil {
		return nil, err
	}
	d := h.Guard.CheckURL(ctx, a.URL)
	if !d.Allowed {
		if h.OnDenied != nil {
			h.OnDenied(Denial{CallID: req.Call.ID, SessionID: req.SessionID, Host: d.Target.Host, Port: d.Target.Port,
				Reason: d.Reason, Detail: d.Detail, URL: a.URL})
		}
		return &pipeline.Block{Code: CodeNetworkDenied, Message: denialMessage(d)}, nil
	}
	if d.Target.HasUserinfo {
		return &pipeline.Block{Code: CodeCredentialsInURL, Message: "the URL carries user:password@; credentials are never sent — remove them", Retryable: true}, nil
	}
	return nil, nil
}

// subject is what a person approves of a fetch: the method and the full URL as it will be
// fetched (the guard's canonical form, and the agent's text beside it when they differ),
// every header and the limits. An approval for the session covers that exact fetch again:
// the same method, URL and headers.
func subject(raw json.RawMessage) (tool.Subject, error) {
	a, err := parseArgs(raw)
	if err != nil {
		return tool.Subject{}, err
	}
	u := a.URL
	if t, err := urlguard.Parse(a.URL); err == nil {
		u = t.URL()
	}
	s := tool.Subject{Fields: []tool.Field{{Name: "method", Value: a.Method}, {Name: "url", Value: u}}}
	if u != a.URL {
		s.Fields = append(s.Fields, tool.Field{Name: "url as written", Value: a.URL})
	}
	hs := make([]string, 0, len(a.Headers))
	for k := range a.Headers {
		hs = append(hs, k)
	}
	sort.Strings(hs)
	for _, k := range hs {
		s.Fields = append(s.Fields, tool.Field{Name: "header " + http.CanonicalHeaderKey(k), Value: a.Headers[k]})
	}
	s.Fields = append(s.Fields, tool.Field{Name: "max_bytes", Value: fmt.Sprint(a.MaxBytes)},
		tool.Field{Name: "timeout", Value: a.timeout().String()})
	key, _ := json.Marshal(struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}{a.Method, u, a.Headers})
	s.Key = string(key)
	s.Session = "this exact fetch again: " + a.Method + " of this same URL with the same headers; no other URL, not even on the same site"
	return s, nil
}
