package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestReadLines(t *testing.T) {
	t.Parallel()
	text := "one\ntwo\nthree\nfour" // no newline at the end: four lines
	for _, tc := range []struct {
		name        string
		in          string
		first, last int
		max         int64
		data        string
		total       int
		binary      bool
	}{
		{"all", text, 1, 0, 100, text, 4, false},
		{"middle", text, 2, 3, 100, "two\nthree\n", 4, false},
		{"past the end", text, 9, 0, 100, "", 4, false},
		{"cut one byte over max", text, 1, 0, 5, "one\ntw", 4, false},
		{"empty", "", 1, 0, 100, "", 0, false},
		{"binary", "a\x00b\n", 1, 0, 100, "", 0, true},
		{"binary past a small buffer's end", strings.Repeat("x", 6<<10) + "\x00", 1, 0, 100, "", 0, true},
		{"line longer than the buffer", strings.Repeat("x", 70<<10) + "\nend\n", 2, 0, 100, "end\n", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Sized as stated, unknown, and stated too small (the file grew since its stat).
			for _, size := range []int64{int64(len(tc.in)), -1, 1} {
				got, err := ReadLines(strings.NewReader(tc.in), size, tc.first, tc.last, tc.max)
				if err != nil || string(got.Data) != tc.data || got.Total != tc.total || got.Binary != tc.binary {
					t.Fatalf("size %d: ReadLines = %q %d binary %v, %v; want %q %d binary %v", size, got.Data, got.Total, got.Binary, err, tc.data, tc.total, tc.binary)
				}
			}
			got, _ := ReadLines(strings.NewReader(tc.in), int64(len(tc.in)), tc.first, tc.last, tc.max)
			// The digest is of the whole file, whatever window was asked for.
			want := ""
			if !tc.binary {
				sum := sha256.Sum256([]byte(tc.in))
				want = hex.EncodeToString(sum[:])
			}
			if got.SHA256 != want {
				t.Fatalf("SHA256 = %q, want %q", got.SHA256, want)
			}
		})
	}
}
