package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
)

// TestWriteResultsAsEncoder: the results written one at a time are byte for byte what
// json.Encoder with a two-space indent wrote of the whole array, for none, one and several
// results, with characters the encoder escapes.
func TestWriteResultsAsEncoder(t *testing.T) {
	mk := func(n int) []pipeline.Result {
		out := make([]pipeline.Result, n)
		for i := range out {
			out[i] = pipeline.Result{CallID: "c<&>" + string(rune('a'+i)), ToolName: "read_file", Status: pipeline.StatusOK,
				Content: "1|<b>\u00e9\u2028</b>\n", Data: map[string]any{"path": "f.txt", "n": i, "list": []any{1, "x"}}}
		}
		return out
	}
	for _, n := range []int{0, 1, 3} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(mk(n)); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		rw := newResultWriter(&got)
		for _, r := range mk(n) {
			rw.write(&r)
		}
		if err := rw.close(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d results:\n got %q\nwant %q", n, got.String(), want.String())
		}
	}
}
