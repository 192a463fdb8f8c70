package webfetch

import (
	"context"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/urlguard"
)

// Hook is the pipeline pre-hook that refuses a web_fetch call whose URL the guard blocks,
// before its handler is reached: the receipt then says the call was denied (code
// network_denied), not that it ran and failed. The handler checks again, with every
// redirect and at connect time.
type Hook struct {
	Guard    *urlguard.Guard
	OnDenied func(Denial)
}

var _ pipeline.PreHook = (*Hook)(nil)

// Name names the hook in receipts.
func (h *Hook) Name() string { return "urlguard" }

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
