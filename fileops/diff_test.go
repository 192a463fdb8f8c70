package fileops

import (
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b, want string
	}{
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"create", "", "x\ny\n", "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"no newline", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n"},
		{"same", "a\n", "a\n", "--- a/f\n+++ b/f\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := unified("f", lineDiff(splitLines(tc.a), splitLines(tc.b))); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func FuzzLineDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd\n")
	f.Add("", "x")
	f.Add("x\nx\nx\n", "x\ny\nx\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		es := lineDiff(splitLines(a), splitLines(b))
		var ga, gb strings.Builder
		for _, e := range es {
			if e.op != '+' {
				ga.WriteString(e.text)
			}
			if e.op != '-' {
				gb.WriteString(e.text)
			}
		}
		if ga.String() != a || gb.String() != b {
			t.Fatalf("edits do not rebuild the texts: %q %q", ga.String(), gb.String())
		}
		_ = unified("f", es)
	})
}

func TestParseMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		engine, line string
		want         match
		ok           bool
	}{
		{"rg", "/w/a.go\x0012:func main() {", match{"/w/a.go", 12, "func main() {"}, true},
		{"rg", "/w/a:1:b.go\x003:x:y", match{"/w/a:1:b.go", 3, "x:y"}, true},
		{"grep", "/w/a.go:7:x := 1", match{"/w/a.go", 7, "x := 1"}, true},
		{"grep", "/w/a:b.go:7:t", match{"/w/a:b.go", 7, "t"}, true},
		{"grep", "Binary file /w/x matches", match{}, false},
		{"find", "/w/x_test.go", match{Path: "/w/x_test.go"}, true},
		{"find", "relative", match{Path: "relative"}, false},
	}
	for _, tc := range tests {
		got, ok := parseMatch(tc.engine, tc.line)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseMatch(%s, %q) = %+v %v, want %+v %v", tc.engine, tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseMatch(f *testing.F) {
	f.Add("grep", "/a:1:b")
	f.Add("rg", "/a\x001:b")
	f.Add("find", "/a")
	f.Fuzz(func(t *testing.T, engine, line string) {
		m, ok := parseMatch(engine, line)
		if ok && (m.Path == "" || m.Path[0] != '/' || len([]rune(m.Text)) > maxLineChars+len(" [line cut]")) {
			t.Fatalf("parseMatch(%q, %q) = %+v", engine, line, m)
		}
	})
}
