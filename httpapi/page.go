package httpapi

import (
	"embed"
	"net/http"
	"path"
)

// The approvals page is three embedded files, nothing fetched from elsewhere. It asks for
// the bearer token once, keeps it in sessionStorage (gone with the tab) and sends it as an
// Authorization header from fetch, event streams included: there is no cookie, so a request
// another site makes the browser send carries no credential. Everything the agent wrote is
// put on the page with textContent, never as markup, and the Content-Security-Policy lets
// only the page's own script run.

//go:embed page/index.html page/app.js page/style.css
var pageFiles embed.FS

const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var pageTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// servePage serves / and the page's assets.
func servePage(w http.ResponseWriter, r *http.Request) {
	name := "page/index.html"
	if r.URL.Path != "/" {
		name = "page/" + path.Base(r.URL.Path)
	}
	data, err := pageFiles.ReadFile(name)
	if err != nil {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such page file")
		return
	}
	h := w.Header()
	h.Set("Content-Type", pageTypes[path.Ext(name)])
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
}
