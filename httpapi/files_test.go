package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
)

// raw sends a request with a raw body (no JSON content type) and returns the answer.
func (f *fixture) raw(t *testing.T, method, path string, body []byte, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	return send(t, req, header...)
}

func etag(b []byte) string {
	s := sha256.Sum256(b)
	return `"` + hex.EncodeToString(s[:]) + `"`
}

// Files move as bytes: PUT creates, GET and HEAD give them back with the SHA-256 as ETag,
// If-Match is the stale_file check, and nothing is written past the limit.
func TestFilesAsBytes(t *testing.T) {
	f := newFixture(t, "[policy]\nmax_write_bytes = 1000\n")
	sid := f.session(t, aliceToken).ID
	base := "/v1/sessions/" + sid + "/files/"
	blob := []byte("bin\x00\xff\xfe marker-9\n")

	if a := f.raw(t, "PUT", base+"dir/blob.bin", blob); a.status != 201 || a.header.Get("ETag") != etag(blob) {
		t.Fatalf("PUT: %d %s %v", a.status, a.body, a.header)
	}
	if got, err := os.ReadFile(filepath.Join(f.ws, "dir", "blob.bin")); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("on disk: %q %v", got, err)
	}
	a := f.raw(t, "GET", base+"dir/blob.bin", nil)
	if a.status != 200 || !bytes.Equal(a.body, blob) || a.header.Get("ETag") != etag(blob) {
		t.Fatalf("GET: %d %q %v", a.status, a.body, a.header)
	}
	if a := f.raw(t, "HEAD", base+"dir/blob.bin", nil); a.status != 200 || len(a.body) != 0 || a.header.Get("ETag") != etag(blob) || a.header.Get("Content-Length") != strconv.Itoa(len(blob)) {
		t.Fatalf("HEAD: %d %q %v", a.status, a.body, a.header)
	}
	// If-Match with a stale ETag: 412 stale_file, the file unchanged.
	if a := f.raw(t, "PUT", base+"dir/blob.bin", []byte("new"), "If-Match", etag([]byte("other"))); a.status != 412 || a.errCode() != "stale_file" {
		t.Fatalf("stale If-Match: %d %s", a.status, a.body)
	}
	if a := f.raw(t, "PUT", base+"dir/blob.bin", []byte("new"), "If-Match", etag(blob)); a.status != 200 || a.header.Get("ETag") != etag([]byte("new")) {
		t.Fatalf("fresh If-Match: %d %s", a.status, a.body)
	}
	// Over [policy] max_write_bytes: 413 naming it, nothing written.
	a = f.raw(t, "PUT", base+"big.bin", bytes.Repeat([]byte("x"), 1001))
	if a.status != 413 || a.errCode() != "body_too_large" || !strings.Contains(string(a.body), "max_write_bytes") {
		t.Fatalf("over the limit: %d %s", a.status, a.body)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "big.bin")); !os.IsNotExist(err) {
		t.Fatalf("an oversize PUT left a file: %v", err)
	}
	if a := f.raw(t, "GET", base+"nothing-here", nil); a.status != 404 || a.errCode() != "not_found" {
		t.Fatalf("missing file: %d %s", a.status, a.body)
	}
}

// A path the policy refuses gets the same reason code over /files as from the file tools,
// and nothing is read or written.
func TestFilesRefusedLikeTheFileTools(t *testing.T) {
	f := newFixture(t, "")
	sid := f.session(t, aliceToken).ID
	must(t, os.WriteFile(filepath.Join(f.ws, ".env"), []byte("SECRET=env-marker-5\n"), 0o600))
	must(t, os.MkdirAll(filepath.Join(f.ws, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.ws, ".git", "config"), []byte("[core]\n"), 0o644))
	tool := func(name, path string) pipeline.Result {
		args := `{"path":"` + path + `"}`
		if name == "write_file" {
			args = `{"path":"` + path + `","content":"x"}`
		}
		a := f.do(t, "POST", "/v1/sessions/"+sid+"/calls", aliceToken, `{"name":"`+name+`","arguments":`+args+`}`)
		var r pipeline.Result
		a.decode(t, &r)
		return r
	}
	for _, tc := range []struct{ method, path, toolName string }{
		{"GET", ".env", "read_file"},
		{"PUT", ".env", "write_file"},
		{"PUT", ".git/config", "write_file"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			want := tool(tc.toolName, tc.path)
			if want.Status == pipeline.StatusOK || want.ErrorCode == "" {
				t.Fatalf("%s %s was not refused by the tool: %+v", tc.toolName, tc.path, want)
			}
			a := f.raw(t, tc.method, "/v1/sessions/"+sid+"/files/"+tc.path, []byte("x"))
			if a.status < 400 || a.errCode() != want.ErrorCode || strings.Contains(string(a.body), "env-marker-5") {
				t.Fatalf("%d %s, want the tool's code %s", a.status, a.body, want.ErrorCode)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, ".git", "config")); string(b) != "[core]\n" {
		t.Fatalf(".git/config changed: %q", b)
	}
}
