package engine

import (
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/urlguard"
	"github.com/airlock-dev/airlock/webfetch"
)

// assembleWeb adds the web toolset (web_fetch) when [network] grants some network: with
// the default mode "none" it is not registered at all. Its URL guard also runs in every
// session's policy step, after the path policy and before approval, so that no person is
// asked about a fetch the guard refuses.
func (e *Engine) assembleWeb() error {
	if e.cfg.Network.Mode == urlguard.ModeNone || !e.enabled(webfetch.Toolset) {
		return nil
	}
	g, err := urlguard.New(e.cfg.Network)
	if err != nil {
		return err
	}
	onDenied := func(d webfetch.Denial) {
		r := &receipt.Receipt{CallID: d.CallID, ToolName: webfetch.Name, SessionID: d.SessionID,
			Network: &receipt.NetworkDenial{Host: d.Host, Port: d.Port, Reason: string(d.Reason), Detail: d.Detail, By: webfetch.Name}}
		if err := e.ledger.Append(receipt.EventNetworkDenied, r); err != nil {
			e.log.Error("ledger append failed", "event", receipt.EventNetworkDenied, "call_id", d.CallID, "error", err)
		}
	}
	def, err := webfetch.Definition(webfetch.Options{Guard: g, OnDenied: onDenied})
	if err != nil {
		return err
	}
	if err := e.reg.Register(def); err != nil {
		return err
	}
	e.checks = append(e.checks, &webfetch.Hook{Guard: g, OnDenied: onDenied})
	return nil
}
