package webfetch

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/tool"
	"github.com/airlock-dev/airlock/urlguard"
)

// Name is the tool's name; Toolset the group it is enabled with.
const (
	Name    = "web_fetch"
	Toolset = "web"
)

// Limits a call may ask for, and the defaults when it does not.
const (
	DefaultMaxBytes = 1 << 20
	HardMaxBytes    = 10 << 20
	DefaultTimeout  = 30 * time.Second
	HardMaxTimeout  = 120 * time.Second
	MaxRedirects    = 5
)

// Error codes a call can fail with.
const (
	CodeNetworkDenied     = "network_denied"      // the guard refused the URL or a redirect hop
	CodeCredentialsInURL  = "credentials_in_url"  // user:password@ in the URL
	CodeForbiddenHeader   = "forbidden_header"    // Authorization, Cookie, …
	CodeTooManyRedirects  = "too_many_redirects"  // more than MaxRedirects hops
	CodeFetchFailed       = "fetch_failed"        // connection, TLS or protocol error
	CodeFetchTimeout      = "fetch_timeout"       // the deadline passed
	CodeBadRedirectTarget = "bad_redirect_target" // a Location that is not a URL
)

// Denial is one refused destination, for the call's receipt (a network_denied event).
type Denial struct {
	CallID    string
	SessionID string
	Host      string
	Port      int
	Reason    urlguard.Reason
	Detail    string
	URL       string
}

// Options configure the tool.
type Options struct {
	// Guard decides every destination. Required.
	Guard *urlguard.Guard
	// OnDenied, when set, is told about every refusal (the wiring writes it to the ledger
	// under the call's receipt).
	OnDenied func(Denial)
	// UserAgent is sent with each request.
	UserAgent string
	// Transport replaces the HTTP transport (tests); its dialer must still be the guard's.
	transport http.RoundTripper
}

// args are web_fetch's arguments, as the input schema allows them.
type args struct {
	URL      string            `json:"url"`
	Method   string            `json:"method"`
	MaxBytes int64             `json:"max_bytes"`
	Timeout  float64           `json:"timeout"`
	Headers  map[string]string `json:"headers"`
}

// Result is the tool's structured output.
type Result struct {
	URL         string   `json:"url"`
	FinalURL    string   `json:"final_url"`
	Status      int      `json:"status"`
	ContentType string   `json:"content_type"`
	Kind        string   `json:"kind"` // html, text, binary, empty
	Bytes       int64    `json:"bytes"`
	Truncated   bool     `json:"truncated"`
	Redirects   []string `json:"redirects"`
	SHA256      string   `json:"sha256,omitempty"`
}

var inputSchema = json.RawMessage(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["url"],
  "properties": {
    "url": {"type": "string", "minLength": 1, "maxLength": 8192, "description": "An http or https URL, without user:password@."},
    "method": {"enum": ["GET", "HEAD"], "default": "GET"},
    "max_bytes": {"type": "integer", "minimum": 1, "maximum": ` + fmt.Sprint(HardMaxBytes) + `, "description": "Response bytes to read at most (default 1 MiB); the rest is cut."},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": ` + fmt.Sprint(HardMaxTimeout.Seconds()) + `, "description": "Seconds for the whole fetch, redirects and body included (default 30)."},
    "headers": {
      "type": "object",
      "maxProperties": 32,
      "propertyNames": {"pattern": "^[!#$%&'*+.^_|~0-9A-Za-z-]{1,128}$", "not": {"pattern": "(?i)^(authorization|proxy-authorization|cookie|host|content-length|transfer-encoding|connection|upgrade|te|trailer|keep-alive|proxy-connection)$"}},
      "additionalProperties": {"type": "string", "maxLength": 4096, "pattern": "^[^\\r\\n\\x00]*$"},
      "description": "Extra request headers. Authorization, Proxy-Authorization, Cookie, Host and hop-by-hop headers are refused."
    }
  }
}`)

var outputSchema = json.RawMessage(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["url", "final_url", "status", "content_type", "kind", "bytes", "truncated", "redirects"],
  "properties": {
    "url": {"type": "string"},
    "final_url": {"type": "string"},
    "status": {"type": "integer"},
    "content_type": {"type": "string"},
    "kind": {"enum": ["html", "text", "binary", "empty"]},
    "bytes": {"type": "integer", "minimum": 0},
    "truncated": {"type": "boolean"},
    "redirects": {"type": "array", "items": {"type": "string"}},
    "sha256": {"type": "string"}
  }
}`)

// forbiddenHeaders are refused by the handler too, whatever the schema let through.
var forbiddenHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Host": true,
	"Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Upgrade": true,
	"Te": true, "Trailer": true, "Keep-Alive": true, "Proxy-Connection": true,
}

// Definition returns the web_fetch tool.
func Definition(o Options) (tool.Definition, error) {
	if o.Guard == nil {
		return tool.Definition{}, errors.New("web_fetch: a URL guard is required")
	}
	if o.UserAgent == "" {
		o.UserAgent = "airlock-web-fetch/1"
	}
	f := newFetcher(o)
	return tool.Definition{
		Name:    Name,
		Version: "1",
		Description: "Fetch one http(s) URL and return its content as readable text (HTML becomes Markdown-like text; " +
			"binary content is summarised). Private, loopback, link-local and cloud metadata addresses are refused, " +
			"as are URLs with credentials. At most 5 redirects; the response is cut at max_bytes.",
		InputSchema:  inputSchema,
		OutputSchema: outputSchema,
		Risk:         tool.RiskNetwork,
		Toolset:      Toolset,
		ParallelSafe: true,
		Timeout:      HardMaxTimeout + 5*time.Second,
		Subject:      subject,
		Handler:      f.handle,
	}, nil
}

func parseArgs(raw json.RawMessage) (args, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("arguments: %w", err)
	}
	if a.Method == "" {
		a.Method = http.MethodGet
	}
	if a.MaxBytes == 0 {
		a.MaxBytes = DefaultMaxBytes
	}
	a.MaxBytes = min(a.MaxBytes, HardMaxBytes)
	return a, nil
}

func (a args) timeout() time.Duration {
	if a.Timeout <= 0 {
		return DefaultTimeout
	}
	return min(time.Duration(a.Timeout*float64(time.Second)), HardMaxTimeout)
}

func refused(code, msg string, retryable bool) *tool.Output {
	return &tool.Output{Status: tool.StatusFailed, ErrorCode: code, ErrorMessage: msg, Retryable: retryable}
}

func checkHeaders(h map[string]string) error {
	for k, v := range h {
		if forbiddenHeaders[http.CanonicalHeaderKey(k)] {
			return fmt.Errorf("header %q may not be set", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %q: value holds a line break or NUL", k)
		}
	}
	return nil
}

// denialMessage is what the model reads for a refusal.
func denialMessage(d urlguard.Decision) string {
	msg := fmt.Sprintf("refused by the URL guard: %s (%s)", d.Reason, d.Reason.Describe())
	if d.Detail != "" {
		msg += ": " + d.Detail
	}
	return msg + "; only public http(s) addresses allowed by [network] can be fetched"
}
