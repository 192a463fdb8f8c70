package helper

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	t.Parallel()
	in := []frame{
		{typ: frameHello, payload: []byte(`{"version":1}`)},
		{typ: frameStdin, id: 1 << 31, payload: bytes.Repeat([]byte{0}, MaxPayload)},
		{typ: frameCancel, id: 3},
	}
	var buf bytes.Buffer
	for _, f := range in {
		if err := writeFrame(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range in {
		got, err := readFrame(&buf)
		if err != nil || got.typ != want.typ || got.id != want.id || !bytes.Equal(got.payload, want.payload) {
			t.Fatalf("frame %d: %v %v", i, got.typ, err)
		}
	}
	if _, err := readFrame(&buf); !errors.Is(err, io.EOF) {
		t.Errorf("end: %v", err)
	}
	if err := writeFrame(io.Discard, frame{typ: frameStdout, payload: make([]byte, MaxPayload+1)}); err == nil {
		t.Errorf("oversized payload written")
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, frame{typ: frameHello, payload: []byte(`{"version":1,"role":"client"}`)}))
	f.Add(appendFrame(appendFrame(nil, frame{typ: frameStdin, id: 9, payload: []byte("abc")}), frame{typ: frameCancel, id: 9}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 5, 'Z', 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var again bytes.Buffer
		consumed := 0
		for {
			fr, err := readFrame(r)
			if err != nil {
				break
			}
			if !fr.typ.valid() || len(fr.payload) > MaxPayload {
				t.Fatalf("accepted an invalid frame: %q %d", fr.typ, len(fr.payload))
			}
			if err := writeFrame(&again, fr); err != nil {
				t.Fatal(err)
			}
			consumed = len(data) - r.Len()
		}
		if !bytes.Equal(again.Bytes(), data[:consumed]) {
			t.Fatalf("re-encoding differs from the input")
		}
	})
}
