package main

import (
	"context"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/tool"
	"github.com/airlock-dev/airlock/urlguard"
	"github.com/airlock-dev/airlock/webfetch"
)

// The web toolset (web_fetch) is offered only when [network] grants some network: with the
// default mode "none" it is not registered at all.
func init() {
	registerExtension("web", func(_ context.Context, st *stack, reg *tool.Registry, opts *pipeline.Options, _ stdio) error {
		if st.cfg.Network.Mode == urlguard.ModeNone {
			return nil
		}
		g, err := urlguard.New(st.cfg.Network)
		if err != nil {
			return err
		}
		onDenied := func(d webfetch.Denial) {
			r := &receipt.Receipt{CallID: d.CallID, ToolName: webfetch.Name, SessionID: d.SessionID,
				Network: &receipt.NetworkDenial{Host: d.Host, Port: d.Port, Reason: string(d.Reason), Detail: d.Detail, By: webfetch.Name}}
			if err := st.ledger.Append(receipt.EventNetworkDenied, r); err != nil {
				st.log.Error("ledger append failed", "event", receipt.EventNetworkDenied, "call_id", d.CallID, "error", err)
			}
		}
		def, err := webfetch.Definition(webfetch.Options{Guard: g, OnDenied: onDenied})
		if err != nil {
			return err
		}
		if err := reg.Register(def); err != nil {
			return err
		}
		opts.PreHooks = append(opts.PreHooks, &webfetch.Hook{Guard: g, OnDenied: onDenied})
		return nil
	})
}
