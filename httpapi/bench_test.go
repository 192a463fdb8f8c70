package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
)

// BenchmarkReadFile times one small read_file call through the HTTP API (a keep-alive
// connection on loopback, token check, JSON both ways) beside the same call made on a
// runtime session directly, in the same run: the difference is the front end's cost.
func BenchmarkReadFile(b *testing.B) {
	f := newFixture(b, "")
	if err := os.WriteFile(filepath.Join(f.ws, "small.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	body := `{"name":"read_file","arguments":{"path":"small.txt"}}`
	b.Run("http", func(b *testing.B) {
		id := f.session(b, aliceToken).ID
		url := f.url + "/v1/sessions/" + id + "/calls"
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest("POST", url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatal(resp.Status)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		sess, err := f.eng.Session(context.Background(), "")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if r := sess.Run(context.Background(), pipeline.Call{Name: "read_file", Arguments: []byte(`{"path":"small.txt"}`)}); r.Status != pipeline.StatusOK {
				b.Fatal(r.ErrorMessage)
			}
		}
	})
}
