package helper

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyExe copies the running test binary, which links this package and so carries the
// source record, to dir/airlock-helper with mode, after edit.
func copyExe(t *testing.T, dir string, mode os.FileMode, edit func([]byte) []byte) string {
	t.Helper()
	data := mustRead(t)
	if edit != nil {
		data = edit(data)
	}
	p := filepath.Join(dir, HelperName)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckSibling(t *testing.T) {
	t.Parallel()
	if !bytes.Contains(mustRead(t), []byte(sourceRecord)) {
		t.Fatal("the test binary does not carry the source record: the linker dropped sourceRecorded")
	}
	otherSource := func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(sourceRecord), []byte(sourceMarker+strings.Repeat("0", len(SourceFingerprint))))
	}
	noRecord := func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(sourceMarker), bytes.Repeat([]byte("x"), len(sourceMarker)))
	}
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		edit    func([]byte) []byte
		take    bool
		whyHas  string
		missing bool
		chown   bool // given away to another user (only root can)
	}{
		{name: "same source", mode: 0o755, take: true},
		{name: "absent", missing: true},
		{name: "other source", mode: 0o755, edit: otherSource, whyHas: "built from other source"},
		{name: "no record", mode: 0o755, edit: noRecord, whyHas: "no source fingerprint"},
		{name: "group-writable", mode: 0o775, whyHas: "may be written by others"},
		{name: "not executable", mode: 0o644, whyHas: "not an executable file"},
		{name: "someone else's", mode: 0o755, chown: true, whyHas: "owned by neither root nor this user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, HelperName)
			if !tc.missing {
				p = copyExe(t, dir, tc.mode, tc.edit)
			}
			if tc.chown {
				if os.Getuid() != 0 {
					t.Skip("only root can give a file away")
				}
				if err := os.Chown(p, 54321, -1); err != nil {
					t.Fatal(err)
				}
			}
			got, why := checkSibling(p)
			switch {
			case tc.take && (got != p || why != ""):
				t.Errorf("checkSibling = %q, %q; want it taken", got, why)
			case !tc.take && got != "":
				t.Errorf("checkSibling took %q", got)
			case tc.missing && why != "":
				t.Errorf("why = %q, want nothing said of a helper that is not there", why)
			case tc.whyHas != "" && !strings.Contains(why, tc.whyHas):
				t.Errorf("why = %q, want it to say %q", why, tc.whyHas)
			}
		})
	}
}

func mustRead(t *testing.T) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecordIn(t *testing.T) {
	t.Parallel()
	fp := strings.Repeat("ab", 32)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{sourceMarker, ""},
		{"x" + sourceMarker + fp + "y", fp},
		{sourceMarker + "not hex at all, not hex at all, not hex at all, not hex at all!!" + sourceMarker + fp, fp},
		{sourceMarker + fp[:10], ""},
	} {
		if got := recordIn([]byte(tc.in)); got != tc.want {
			t.Errorf("recordIn(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
