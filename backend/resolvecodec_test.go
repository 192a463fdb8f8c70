package backend

import (
	"errors"
	"reflect"
	"testing"
)

var resolvedSample = []ResolvedPath{
	{Real: "/w/a b.txt", Exists: true, Kind: "f", Links: 1, Size: 1 << 33},
	{Real: "/w/dir", Exists: true, Kind: "d", Link: true, ViaLink: true, Links: 3},
	{Real: "/w/missing/x", DotDot: true, Loop: true, Size: -1},
	{Real: "/dev/null", Exists: true, Kind: "o"},
	{},
}

// TestResolvedRoundTrips: every field of every path comes back as it was encoded, in order,
// and an empty answer is an empty list.
func TestResolvedRoundTrips(t *testing.T) {
	got, err := DecodeResolved(AppendResolved(nil, resolvedSample))
	if err != nil || !reflect.DeepEqual(got, resolvedSample) {
		t.Fatalf("came back as %+v, %v", got, err)
	}
	if got, err := DecodeResolved(AppendResolved(nil, nil)); err != nil || len(got) != 0 {
		t.Fatalf("an empty answer came back as %+v, %v", got, err)
	}
}

// TestResolvedRefuses: an answer cut anywhere, with bytes after its last path, a count it
// cannot hold, an unknown kind or flag, or JSON, is refused.
func TestResolvedRefuses(t *testing.T) {
	whole := AppendResolved(nil, resolvedSample)
	for i := 0; i < len(whole); i++ {
		if _, err := DecodeResolved(whole[:i]); !errors.Is(err, errResolvedForm) {
			t.Errorf("cut at %d of %d: %v, want a malformed answer", i, len(whole), err)
		}
	}
	one := AppendResolved(nil, []ResolvedPath{{Real: "/a", Kind: "f"}})
	for name, b := range map[string][]byte{
		"trailing bytes": append(append([]byte(nil), one...), 0),
		"count too big":  {0xff, 0xff, 0x03, 0, 0, 0, 0, 0},
		"unknown kind":   {1, 2, '/', 'a', 0, 'x', 0, 0},
		"unknown flag":   {1, 2, '/', 'a', 0x40, 'f', 0, 0},
		"json":           []byte(`[{"real":"/a"}]`),
	} {
		if _, err := DecodeResolved(b); !errors.Is(err, errResolvedForm) {
			t.Errorf("%s: %v, want a malformed answer", name, err)
		}
	}
}

// FuzzResolved: no input panics the decoder or makes it allocate beyond the input's size,
// and what decodes comes back the same through an encode (a varint may be spelled longer
// than the encoder writes it).
func FuzzResolved(f *testing.F) {
	f.Add(AppendResolved(nil, resolvedSample))
	f.Add([]byte{3, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeResolved(b)
		if err != nil {
			return
		}
		again, err := DecodeResolved(AppendResolved(nil, rs))
		if err != nil || !reflect.DeepEqual(again, rs) {
			t.Fatalf("%q decoded to %+v, which came back as %+v, %v", b, rs, again, err)
		}
	})
}
