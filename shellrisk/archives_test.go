package shellrisk

import (
	"slices"
	"testing"
)

// tar's archive is written by -c and its kin and read otherwise, whichever way the options
// are spelled (old style, clustered, long, abbreviated, after the operands); an archive
// written outside the workspace is write_outside_workspace.
func TestTarArchiveFile(t *testing.T) {
	t.Parallel()
	outside := []string{
		"tar -cf ../out/a.tar a.txt",
		"tar cf ../out/a.tar a.txt",
		"tar cvf ../out/a.tar a.txt",
		"tar czbf 20 ../out/a.tgz a.txt", // old style: b takes 20, f the next word
		"tar --create --file=../out/a.tar a.txt",
		"tar --cre --file ../out/a.tar a.txt",
		"tar --creat --fil ../out/a.tar a.txt", // --fil is --file or --files-from: each is judged
		"tar --fi=../out/a.tar -c a.txt",
		"tar --file=../out/a.tar -c a.txt",
		"tar -f ../out/a.tar -c a.txt",
		"tar -rf /tmp/a.tar a.txt",
		"tar --index-file=../out/i -c a.txt",
		"tar -C /tmp -xf a.tar",
	}
	for _, cmd := range outside {
		if v := Classify(cmd); !slices.Contains(v.Codes(), "write_outside_workspace") {
			t.Errorf("%q: %s %v, want write_outside_workspace", cmd, v.Risk, v.Codes())
		}
	}
	inside := []string{
		"tar -xf ../in.tar",  // reads the archive outside, extracts here
		"tar xzf /tmp/x.tgz", // old style extract
		"tar -czf a.tgz src",
		"tar cf - . ",
		"tar -tf /tmp/x.tar",
	}
	for _, cmd := range inside {
		if v := Classify(cmd); slices.Contains(v.Codes(), "write_outside_workspace") || v.Risk == RiskDangerous {
			t.Errorf("%q: %s %v, want a write inside the workspace", cmd, v.Risk, v.Codes())
		}
	}
}

func TestOldStyle(t *testing.T) {
	t.Parallel()
	p := &program{oldStyle: true, valueFlags: map[string]bool{"-f": true, "-b": true}}
	words := func(ss ...string) []arg {
		out := make([]arg, len(ss))
		for i, s := range ss {
			out[i] = arg{text: s}
		}
		return out
	}
	text := func(as []arg) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.text)
		}
		return out
	}
	for _, tc := range []struct{ in, want []string }{
		{[]string{"cfb", "x.tar", "20", "a"}, []string{"-c", "-f", "x.tar", "-b", "20", "a"}},
		{[]string{"-cf", "x.tar"}, []string{"-cf", "x.tar"}},
		{[]string{"x.tar"}, []string{"x.tar"}}, // not all letters
		{[]string{"cf"}, []string{"-c", "-f"}},
	} {
		if got := text(oldStyle(p, words(tc.in...))); !slices.Equal(got, tc.want) {
			t.Errorf("oldStyle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
