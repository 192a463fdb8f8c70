// Package webfetch is the web_fetch tool: it fetches one http or https URL for the model,
// on the Airlock host, and returns readable text.
//
// Every destination passes the URL guard (package urlguard) three times: the pre-hook
// ([Hook]) refuses a blocked URL before the handler is reached, the handler checks each
// redirect hop again (at most five), and the dialer checks the IP actually connected to
// (urlguard's Control), so neither a redirect to 169.254.169.254 nor a name that rebinds to
// loopback between the check and the connect gets through. Requests are always built from
// the guard's canonical URL, never from the model's string, so what was checked is what is
// fetched.
//
// Responses are capped while streaming (max_bytes, and a deadline over the whole call);
// HTML is turned into Markdown-flavoured text with
// github.com/JohannesKaufmann/html-to-markdown (built on golang.org/x/net/html: a real HTML5
// parser, scripts and styles dropped, links kept and made absolute); other text is returned
// as it is; binary content is summarised (type, size, SHA-256), never dumped.
//
// Credentials never travel: a URL with user:password@ is refused, and the model cannot set
// Authorization, Proxy-Authorization or Cookie headers. Environment proxies are ignored, so
// HTTP_PROXY cannot route a fetch around the guard.
package webfetch
