package webfetch

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/airlock-dev/airlock/tool"
	"github.com/airlock-dev/airlock/urlguard"
)

type fetcher struct {
	o  Options
	rt http.RoundTripper
}

func newFetcher(o Options) *fetcher {
	rt := o.transport
	if rt == nil {
		rt = &http.Transport{
			Proxy:                  nil, // never HTTP_PROXY from the environment: the guard is the only way out
			DialContext:            o.Guard.DialContext,
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  30 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		}
	}
	return &fetcher{o: o, rt: rt}
}

func (f *fetcher) deny(inv *tool.Invocation, d urlguard.Decision, raw string) *tool.Output {
	if f.o.OnDenied != nil {
		f.o.OnDenied(Denial{CallID: inv.CallID, SessionID: inv.SessionID, Host: d.Target.Host, Port: d.Target.Port,
			Reason: d.Reason, Detail: d.Detail, URL: raw})
	}
	return refused(CodeNetworkDenied, denialMessage(d), false)
}

func (f *fetcher) handle(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
	a, err := parseArgs(inv.Args)
	if err != nil {
		return nil, err
	}
	if err := checkHeaders(a.Headers); err != nil {
		return refused(CodeForbiddenHeader, err.Error(), true), nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout())
	defer cancel()

	d := f.o.Guard.CheckURL(ctx, a.URL)
	if !d.Allowed {
		return f.deny(inv, d, a.URL), nil
	}
	if d.Target.HasUserinfo {
		return refused(CodeCredentialsInURL, "the URL carries user:password@; credentials are never sent — remove them", true), nil
	}
	res := Result{URL: a.URL, Redirects: []string{}}
	first := d.Target
	target := d.Target
	var resp *http.Response
	for hop := 0; ; hop++ {
		req, err := http.NewRequestWithContext(ctx, a.Method, target.URL(), nil)
		if err != nil {
			return refused(CodeFetchFailed, fmt.Sprintf("cannot build the request: %v", err), false), nil
		}
		req.Header.Set("User-Agent", f.o.UserAgent)
		req.Header.Set("Accept", "text/html, text/*;q=0.9, application/json;q=0.9, */*;q=0.5")
		if sameOrigin(first, target) {
			for k, v := range a.Headers {
				req.Header.Set(k, v)
			}
		}
		resp, err = f.rt.RoundTrip(req)
		if err != nil {
			return f.transportError(inv, ctx, err, target), nil
		}
		if !isRedirect(resp.StatusCode) || resp.Header.Get("Location") == "" {
			break
		}
		loc := resp.Header.Get("Location")
		drain(resp)
		if hop == MaxRedirects {
			return refused(CodeTooManyRedirects, fmt.Sprintf("more than %d redirects (last to %q)", MaxRedirects, loc), false), nil
		}
		next, err := req.URL.Parse(loc)
		if err != nil {
			return refused(CodeBadRedirectTarget, fmt.Sprintf("redirect to %q: %v", loc, err), false), nil
		}
		nd := f.o.Guard.CheckURL(ctx, next.String())
		if !nd.Allowed {
			return f.deny(inv, nd, next.String()), nil
		}
		if nd.Target.HasUserinfo {
			return refused(CodeCredentialsInURL, "a redirect carried user:password@; not followed", false), nil
		}
		res.Redirects = append(res.Redirects, nd.Target.URL())
		target = nd.Target
	}
	defer resp.Body.Close()
	res.FinalURL, res.Status = target.URL(), resp.StatusCode
	res.ContentType = resp.Header.Get("Content-Type")

	body, truncated, err := readCapped(resp.Body, a.MaxBytes)
	if err != nil && !errors.Is(err, io.EOF) {
		if ctx.Err() != nil {
			return refused(CodeFetchTimeout, fmt.Sprintf("the fetch took longer than %s; %d bytes read", a.timeout(), len(body)), true), nil
		}
		return refused(CodeFetchFailed, fmt.Sprintf("reading the response: %v", err), true), nil
	}
	res.Bytes, res.Truncated = int64(len(body)), truncated
	sum := sha256.Sum256(body)
	res.SHA256 = hex.EncodeToString(sum[:])
	text, kind := render(body, res.ContentType, target.URL())
	res.Kind = kind
	if res.ContentType == "" {
		res.ContentType = http.DetectContentType(body)
	}
	return &tool.Output{Content: header(res) + text, Data: res, Truncated: truncated}, nil
}

// transportError turns a failed round trip into an answer; a guard refusal at dial time
// (rebinding) is a network_denied like any other.
func (f *fetcher) transportError(inv *tool.Invocation, ctx context.Context, err error, t urlguard.Target) *tool.Output {
	var de *urlguard.DeniedError
	if errors.As(err, &de) {
		d := urlguard.Decision{Reason: de.Reason, Detail: de.Detail, Target: t, Addr: de.Addr}
		if de.Addr.IsValid() {
			d.Detail = fmt.Sprintf("%s resolved to %s at connect time", t.Host, de.Addr)
		}
		return f.deny(inv, d, t.URL())
	}
	if ctx.Err() != nil {
		return refused(CodeFetchTimeout, "the fetch did not finish in time", true)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return refused(CodeFetchFailed, fmt.Sprintf("fetching %s: %v", t.URL(), err), true)
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func sameOrigin(a, b urlguard.Target) bool {
	return a.Scheme == b.Scheme && a.Host == b.Host && a.Port == b.Port
}

// drain reads a little of a redirect's body so the connection can be reused, then closes it.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// readCapped reads at most limit bytes, and says whether there was more.
func readCapped(r io.Reader, limit int64) ([]byte, bool, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(body)) > limit {
		return body[:limit], true, nil
	}
	if err == nil {
		err = io.EOF
	}
	return body, false, err
}

func header(r Result) string {
	s := fmt.Sprintf("%s %d %s, %d bytes", r.FinalURL, r.Status, r.ContentType, r.Bytes)
	if r.Truncated {
		s += " (cut at max_bytes)"
	}
	if len(r.Redirects) > 0 {
		s += fmt.Sprintf(", after %d redirect(s) from %s", len(r.Redirects), r.URL)
	}
	return s + "\n\n"
}
