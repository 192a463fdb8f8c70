// Package egress is Airlock's egress proxy: the one way out for commands when
// `[network] mode = "allowlist"`.
//
// A command's environment points HTTP_PROXY and HTTPS_PROXY at it (on Docker, the container
// has no network at all and the resident helper relays a loopback port inside it to a unix
// socket this proxy answers on, so the proxy is the only thing it can reach). It serves HTTP CONNECT (for https and anything tunnelled) and plain HTTP requests
// in absolute form, by host name, and lets through only hosts that the URL guard allows
// under the configured allow_domains — checked when the request arrives (deny_domains,
// the mode, allow_domains: no lookup for a refused name) and again when it dials, on every
// address the name resolves to and on the IP actually connected (urlguard's Control). A
// CONNECT to 169.254.169.254, or to an allowed name that resolves to an internal address,
// is refused before any packet is sent.
//
// Every refusal is logged, counted ([Proxy.Stats], and an [Observer] such as the Prometheus
// counters of package metrics) and handed to the OnDenied callback with host, port, reason
// and the call it belongs to, so that the wiring writes it to that call's receipt as a
// network_denied event. The call is known from the listener its commands were given
// ([Proxy.ServeCall]: one listener per call, a unix socket on Docker), from which command
// holds the connection's client end ([Proxy.SetOwner], [Proxy.ServeOwned] with an [Owner]:
// local and SSH, whose commands may reach one fixed port only), or from per-call proxy
// credentials ([Proxy.Token], for clients outside Airlock: commands never get credentials). A
// refusal none of these names is the session's, with [Denial.Unattributed] saying why — never
// a guessed call.
package egress
