package shellrisk

import (
	"path"
	"strings"
	"testing"
)

// FuzzGlobEnds checks the promise globSecretName leans on to skip path.Match: whatever a
// pattern matches starts with the head and ends with the tail globEnds gives.
func FuzzGlobEnds(f *testing.F) {
	for _, s := range [][2]string{
		{"*.tmp", "x.tmp"}, {"[*]x", "*x"}, {`a\*b`, "a*b"}, {"id_*", "id_rsa"}, {"*.p?m", "a.pem"},
		{"[a-z]*.env", "x.env"}, {"*]", "a]"}, {`*\]`, "a]"}, {"*[]]", "a]"}, {"*.key", ".key"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if ok, _ := path.Match(pattern, name); !ok {
			return
		}
		head, tail := globEnds(pattern)
		if !strings.HasPrefix(name, head) || !strings.HasSuffix(name, tail) {
			t.Fatalf("%q matches %q, which does not start with %q and end with %q", pattern, name, head, tail)
		}
	})
}

// FuzzHasComponents checks hasComponents against the four tests it stands for.
func FuzzHasComponents(f *testing.F) {
	for _, s := range [][2]string{
		{".git/config", ".git/config"}, {"a/.git/config", ".git/config"}, {".git/hooks/pre", ".git/hooks"},
		{"x/.git/modules/y", ".git/modules"}, {"x.git/config", ".git/config"}, {"/", ""}, {"a//b", ""}, {"", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, c, e string) {
		want := c == e || strings.HasSuffix(c, "/"+e) || strings.HasPrefix(c, e+"/") || strings.Contains(c, "/"+e+"/")
		if got := hasComponents(c, e); got != want {
			t.Fatalf("hasComponents(%q, %q) = %v, want %v", c, e, got, want)
		}
	})
}

// FuzzPathTests checks metaIndex and isUnder against the expressions they stand for.
func FuzzPathTests(f *testing.F) {
	for _, s := range [][2]string{{"/etc/passwd", "/etc"}, {"/etc", "/etc/"}, {"/etcx", "/etc"}, {`/a\*`, "/"}, {"", ""}, {"/a/b", "/a/"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, p, e string) {
		if got, want := metaIndex(e), strings.IndexAny(e, `*?[\`); got != want {
			t.Fatalf("metaIndex(%q) = %d, want %d", e, got, want)
		}
		if got, want := isUnder(p, e), strings.HasPrefix(p, strings.TrimSuffix(e, "/")+"/"); got != want {
			t.Fatalf("isUnder(%q, %q) = %v, want %v", p, e, got, want)
		}
	})
}
