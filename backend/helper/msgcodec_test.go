package helper

import (
	"errors"
	"reflect"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

var (
	fullStart = startMsg{
		Argv: []string{"/bin/echo", "", "a b"}, Command: "echo hi", Dir: "/w/sub", Workspace: "/w",
		Env: []string{"A=1", "EMPTY=", "U=ü"}, SameEnv: true, Stdin: true, TimeoutMS: 120000,
		KillGraceMS: -1, MaxOutputBytes: 1 << 40, Live: true, EgressSocket: "/run/e.sock", EgressTunnel: true,
	}
	fullFile = fileMsg{
		Op: "window", Path: "/w/a b.txt", Root: "/w", First: 3, Last: -1, MaxBytes: 1 << 40,
		ExpectSHA256: "ab", MinFreeBytes: 7, DataLen: 12, Pattern: "x.*y", Glob: "*.go",
		FilesOnly: true, MaxResults: 1000, DenyNames: []string{".env", "", "id_rsa*"},
	}
	fullFileDone = fileDoneMsg{
		Size: 1 << 33, Lines: 42, Binary: true, SHA256: "deadbeef", Created: true, DataLen: 9,
		Code: "not_found", Error: "no such file",
	}
	resolvedSample = []backend.ResolvedPath{
		{Real: "/w/a b.txt", Exists: true, Kind: "f", Links: 1, Size: 1 << 33},
		{Real: "/w/dir", Exists: true, Kind: "d", Link: true, ViaLink: true, Links: 3},
		{Real: "/w/missing/x", DotDot: true, Loop: true, Size: -1},
		{Real: "/dev/null", Exists: true, Kind: "o"},
		{},
	}
	fullExit = exitMsg{
		ExitCode: -1, TimedOut: true, Cancelled: true, Truncated: true, StdoutBytes: 1 << 33,
		StderrBytes: 7, DurationNS: 1234567890123, Error: "chdir: no such file", ErrorKind: kindStart,
	}
)

// TestMsgCodecRoundTrips: every field of a start and an exit comes back as it was sent, and
// zero values are left out of the encoding.
func TestMsgCodecRoundTrips(t *testing.T) {
	for _, m := range []startMsg{fullStart, {}, {Command: "true", Dir: "/"}} {
		got, err := decodeStartMsg(m.encode())
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("start %+v came back as %+v, %v", m, got, err)
		}
	}
	for _, m := range []exitMsg{fullExit, {}, {ExitCode: 127}} {
		got, err := decodeExitMsg(m.encode())
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("exit %+v came back as %+v, %v", m, got, err)
		}
	}
	for _, m := range []fileMsg{fullFile, {}, {Op: "resolve"}} {
		got, err := decodeFileMsg(m.encode())
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("file request %+v came back as %+v, %v", m, got, err)
		}
	}
	for _, m := range []fileDoneMsg{fullFileDone, {}, {Size: 5}} {
		got, err := decodeFileDoneMsg(m.encode())
		if err != nil || got != m {
			t.Errorf("file answer %+v came back as %+v, %v", m, got, err)
		}
	}
	if got, err := DecodeResolved(encodeResolved(resolvedSample)); err != nil || !reflect.DeepEqual(got, resolvedSample) {
		t.Errorf("resolved paths came back as %+v, %v", got, err)
	}
	if got, err := DecodeResolved(encodeResolved(nil)); err != nil || len(got) != 0 {
		t.Errorf("an empty resolve answer came back as %+v, %v", got, err)
	}
	if n := len((exitMsg{}).encode()); n != 0 {
		t.Errorf("an exit of zero values is %d bytes, want 0", n)
	}
}

// TestMsgCodecRefuses: a message that is not whole, names a field this build does not know,
// or gives one twice is refused.
func TestMsgCodecRefuses(t *testing.T) {
	cases := map[string][]byte{
		"unknown field":        {'Z'},
		"twice":                append(startMsg{Dir: "/a"}.encode(), startMsg{Dir: "/b"}.encode()...),
		"flag twice":           {tagStdin, tagStdin},
		"string past the end":  {tagDir, 9, '/'},
		"no length":            {tagDir},
		"list count too large": {tagEnv, 0xff, 0xff, 0x03, 1, 'a'},
		"cut inside a list":    {tagEnv, 2, 1, 'a'},
		"cut integer":          {tagTimeoutMS, 0x80},
		"json":                 []byte(`{"command":"true"}`),
	}
	for name, b := range cases {
		if _, err := decodeStartMsg(b); !errors.Is(err, errMsgCodec) {
			t.Errorf("%s: start decode gave %v, want a malformed message", name, err)
		}
	}
	whole := encodeResolved(resolvedSample)
	for i := 0; i < len(whole); i++ {
		if _, err := DecodeResolved(whole[:i]); !errors.Is(err, errMsgCodec) {
			t.Errorf("a resolve answer cut at %d of %d: %v, want a malformed message", i, len(whole), err)
		}
	}
	one := encodeResolved([]backend.ResolvedPath{{Real: "/a", Kind: "f"}})
	for name, b := range map[string][]byte{
		"trailing bytes": append(append([]byte(nil), one...), 0),
		"count too big":  {0xff, 0xff, 0x03, 0},
		"unknown kind":   {1, 3, tagKind, 1, 'x'},
		"unknown field":  {1, 1, 'Z'},
		"json":           []byte(`[{"real":"/a"}]`),
	} {
		if _, err := DecodeResolved(b); !errors.Is(err, errMsgCodec) {
			t.Errorf("resolve answer, %s: %v, want a malformed message", name, err)
		}
	}
	for name, decode := range map[string]func([]byte) error{
		"exit":        func(b []byte) error { _, err := decodeExitMsg(b); return err },
		"file":        func(b []byte) error { _, err := decodeFileMsg(b); return err },
		"file answer": func(b []byte) error { _, err := decodeFileDoneMsg(b); return err },
	} {
		for what, b := range map[string][]byte{
			"unknown field": {'Z'}, "twice": {tagSize, 2, tagSize, 2}, "cut": {tagSize},
			"an int beyond 64 bits": {tagLines, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		} {
			if err := decode(b); !errors.Is(err, errMsgCodec) {
				t.Errorf("%s, %s: %v, want a malformed message", name, what, err)
			}
		}
	}
}

// FuzzStartMsg: for the start, exit and file messages and the resolve answer, no input panics
// the decoder or makes it allocate beyond the input's size, and what decodes encodes to
// something that decodes to the same.
func FuzzStartMsg(f *testing.F) {
	f.Add(fullStart.encode())
	f.Add(fullExit.encode())
	f.Add(fullFile.encode())
	f.Add(fullFileDone.encode())
	f.Add(encodeResolved(resolvedSample))
	f.Add([]byte{tagEnv, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := decodeStartMsg(b); err == nil {
			again, err := decodeStartMsg(m.encode())
			if err != nil || !reflect.DeepEqual(normalStart(again), normalStart(m)) {
				t.Fatalf("%q decoded to %+v, which came back as %+v, %v", b, m, again, err)
			}
		}
		if m, err := decodeExitMsg(b); err == nil {
			again, err := decodeExitMsg(m.encode())
			if err != nil || again != m {
				t.Fatalf("%q decoded to %+v, which came back as %+v, %v", b, m, again, err)
			}
		}
		if m, err := decodeFileMsg(b); err == nil {
			again, err := decodeFileMsg(m.encode())
			if len(m.DenyNames) == 0 {
				m.DenyNames = nil
			}
			if err != nil || !reflect.DeepEqual(again, m) {
				t.Fatalf("%q decoded to %+v, which came back as %+v, %v", b, m, again, err)
			}
		}
		if rs, err := DecodeResolved(b); err == nil {
			again, err := DecodeResolved(encodeResolved(rs))
			if err != nil || !reflect.DeepEqual(again, rs) {
				t.Fatalf("%q decoded to %+v, which came back as %+v, %v", b, rs, again, err)
			}
		}
		if m, err := decodeFileDoneMsg(b); err == nil {
			again, err := decodeFileDoneMsg(m.encode())
			if err != nil || again != m {
				t.Fatalf("%q decoded to %+v, which came back as %+v, %v", b, m, again, err)
			}
		}
	})
}

// normalStart makes empty lists nil: an empty list is left out of the encoding.
func normalStart(m startMsg) startMsg {
	if len(m.Argv) == 0 {
		m.Argv = nil
	}
	if len(m.Env) == 0 {
		m.Env = nil
	}
	return m
}
