package webfetch

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
)

// render turns a body into what the model reads, and names its kind.
func render(body []byte, contentType, baseURL string) (string, string) {
	if len(body) == 0 {
		return "", "empty"
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt == "" {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		md, err := htmltomarkdown.ConvertString(string(bytes.ToValidUTF8(body, []byte("\uFFFD"))), converter.WithDomain(baseURL))
		if err == nil {
			return md, "html"
		}
		return strings.ToValidUTF8(string(body), "\uFFFD"), "text"
	case isText(mt) && (utf8.Valid(body) || looksText(body)):
		return strings.ToValidUTF8(string(body), "\uFFFD"), "text"
	}
	return fmt.Sprintf("[binary content: %s, %d bytes; not shown]", mt, len(body)), "binary"
}

func isText(mt string) bool {
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-javascript",
		"application/ecmascript", "application/x-yaml", "application/yaml", "application/toml",
		"application/x-sh", "application/ld+json", "application/rss+xml", "application/atom+xml",
		"image/svg+xml", "application/x-ndjson", "application/graphql":
		return true
	}
	return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// looksText accepts a body cut in the middle of a UTF-8 sequence, or with a few bad bytes.
func looksText(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	bad := 0
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			bad++
		}
		b = b[n:]
	}
	return bad <= 8
}
