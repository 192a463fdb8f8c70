package differential

import (
	"testing"

	"github.com/airlock-dev/airlock/shellrisk"
)

// TestMatch checks the comparison itself, without a shell: what counts as the same program
// with the same arguments.
func TestMatch(t *testing.T) {
	t.Parallel()
	const u = shellrisk.UnknownMark
	cases := []struct {
		name   string
		judged shellrisk.Command
		ran    []string
		want   bool
	}{
		{"same", shellrisk.Command{Name: "rm", Argv: []string{"rm", "-rf", "/tmp/p"}}, []string{"rm", "-rf", "/tmp/p"}, true},
		{"path vs name", shellrisk.Command{Name: "rm", Argv: []string{"/bin/rm", "-rf", "x"}}, []string{"rm", "-rf", "x"}, true},
		{"other program", shellrisk.Command{Name: "ls", Argv: []string{"ls", "-rf", "x"}}, []string{"rm", "-rf", "x"}, false},
		{"other argument", shellrisk.Command{Name: "rm", Argv: []string{"rm", "-rf", "/tmp/p"}}, []string{"rm", "-rf", "/tmp/p\r"}, false},
		{"extra argument", shellrisk.Command{Name: "rm", Argv: []string{"rm", "x"}}, []string{"rm", "x", "y"}, false},
		{"missing argument", shellrisk.Command{Name: "rm", Argv: []string{"rm", "x", "y"}}, []string{"rm", "x"}, false},
		{"unknown word is any run", shellrisk.Command{Name: "rm", Argv: []string{"rm", u, "z"}, Unknown: []int{1}}, []string{"rm", "a", "b", "z"}, true},
		{"unknown word may be nothing", shellrisk.Command{Name: "rm", Argv: []string{"rm", u, "z"}, Unknown: []int{1}}, []string{"rm", "z"}, true},
		{"known words still count", shellrisk.Command{Name: "rm", Argv: []string{"rm", u, "z"}, Unknown: []int{1}}, []string{"rm", "a", "y"}, false},
		{"glob", shellrisk.Command{Name: "rm", Argv: []string{"rm", "*.go"}, Unknown: []int{1}}, []string{"rm", "a.go", "b.go"}, true},
		{"unknown program", shellrisk.Command{Argv: []string{u, "-rf", "/"}, Unknown: []int{0}}, []string{"rm", "-rf", "/"}, true},
		{"unknown program, known args", shellrisk.Command{Argv: []string{u, "-rf", "/"}, Unknown: []int{0}}, []string{"rm", "-rf", "/x"}, false},
		{"no argv", shellrisk.Command{Name: "rm"}, []string{"rm"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := matchArgv(tc.judged, tc.ran); got != tc.want {
				t.Errorf("matchArgv(%q, %q) = %v, want %v", tc.judged.Argv, tc.ran, got, tc.want)
			}
		})
	}
}

func TestPatternMatch(t *testing.T) {
	t.Parallel()
	const u = shellrisk.UnknownMark
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"rm", "rm", true},
		{"rm", "rmx", false},
		{"r" + u, "rm", true},
		{u + "m", "rm", true},
		{"a" + u + "b" + u + "c", "aXbYc", true},
		{"a" + u + "b" + u + "c", "aXc", false},
		{"ab" + u + "ba", "aba", false},
	} {
		if got := patternMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("patternMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestNormalise(t *testing.T) {
	t.Parallel()
	r := result{Dir: "/tmp/w/1-2/ws", Home: "/tmp/w/1-2/home"}
	got := realArgv(r, entry{Exe: []byte("/usr/bin/rm"), Argv: [][]byte{[]byte("foo"), []byte("/tmp/w/1-2/ws/../x"), []byte("/tmp/w/1-2/home"), []byte("/tmp/w/1-2/wsx"), []byte("a:/tmp/w/1-2/home/b")}})
	want := []string{"rm", "./../x", "~", "/tmp/w/1-2/wsx", "a:~/b"}
	if len(got) != len(want) {
		t.Fatalf("realArgv = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("realArgv[%d] = %q, want %q", i, got[i], want[i])
		}
	}
	for in, want := range map[string]string{`rm`: "rm", `$'rm\r'`: "rm\r", `$'\357\273\277rm'`: "\ufeffrm", `$'a\'b'`: "a'b", `$'x\\y'`: `x\y`} {
		if got := bashUnquote(in); got != want {
			t.Errorf("bashUnquote(%q) = %q, want %q", in, got, want)
		}
	}
}
