package shellrisk

import (
	"slices"
	"strings"
	"testing"
)

// TestAliasReadings checks that an alias (or hash -p) adds a reading and never replaces
// the word: bash -c without expand_aliases runs the word itself, while dash, busybox sh
// and bash as sh run the expansion (F12). want are argument vectors the verdict must list
// (words joined by a space); never are ones it must not.
func TestAliasReadings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		want    []string
		never   []string
		risk    Risk
	}{
		{command: "alias ls='rm -rf /tmp/p'\nls", want: []string{"ls", "rm -rf /tmp/p"}},
		{command: "alias x='rm '\nalias y='-rf /'\nx y", want: []string{"x y", "rm -rf /"}, risk: RiskDangerous},
		{command: "alias a='eval' b='rm -rf /tmp/p'\na b", want: []string{"a b", "rm -rf /tmp/p"}},
		{command: "alias ls='rm -rf /tmp/p'\n(ls)", want: []string{"ls", "rm -rf /tmp/p"}},
		{command: "alias ls='rm -rf /tmp/p'\nf() { ls; }\nf", want: []string{"ls", "rm -rf /tmp/p"}},
		{command: "unalias -a; alias ls='rm -rf /tmp/p'\n{ ls; }", want: []string{"ls", "rm -rf /tmp/p"}},
		// An alias is not expanded again in its own text.
		{command: "alias ls='ls -l'\nls x", want: []string{"ls x", "ls -l x"}, never: []string{"ls -l -l x"}},
		// Only the bare word alias defines one: ~/alias and ./alias are scripts.
		{command: "~/alias ls='rm -rf /tmp/p'; ls x", want: []string{"ls x"}, never: []string{"rm -rf /tmp/p x"}},
		{command: "./alias ls='rm -rf /tmp/p'; ls x", want: []string{"ls x"}, never: []string{"rm -rf /tmp/p x"}},
		// Quote removal comes first: 'alias' and \alias are the built-in.
		{command: "'alias' ls='rm -rf /tmp/p'\nls x", want: []string{"ls x", "rm -rf /tmp/p x"}},
		{command: "\\alias ls='rm -rf /tmp/p'\nls x", want: []string{"ls x", "rm -rf /tmp/p x"}},
		// hash -p: bash runs PATH, or NAME when PATH is not executable; dash and busybox
		// have no hash -p and run NAME.
		{command: "hash -p ./evil ls; ls", want: []string{"./evil", "ls"}},
		{command: "hash -p /bin/rm ls; ls -rf /", want: []string{"/bin/rm -rf /", "ls -rf /"}, risk: RiskDangerous},
	} {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			v := Classify(tc.command)
			var got []string
			for _, c := range v.Commands {
				got = append(got, strings.Join(c.Argv, " "))
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("commands %q: want %q among them", got, w)
				}
			}
			for _, n := range tc.never {
				if slices.Contains(got, n) {
					t.Errorf("commands %q: want no %q", got, n)
				}
			}
			if tc.risk != 0 && v.Risk != tc.risk {
				t.Errorf("risk %v, want %v (reasons %v)", v.Risk, tc.risk, v.Reasons)
			}
			for _, r := range v.Reasons {
				if r.Code == codeTooComplex {
					t.Errorf("reason %v: an alias must not recurse", r)
				}
			}
		})
	}
}

// TestIFSFields checks that an unquoted $IFS splits the word it is in where it stands,
// and only there: a quoted part of the same word stays one field, as in a real shell.
func TestIFSFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		want    []string
	}{
		{"rm${IFS}-rf${IFS}/", []string{"rm|-rf|/"}},
		// The single-quoted code is one field: sh runs it, and splits it itself.
		{"sh${IFS}-c${IFS}'rm${IFS}-r${IFS}-f${IFS}$HOME'", []string{"sh|-c|rm${IFS}-r${IFS}-f${IFS}$HOME", "rm|-r|-f|~"}},
		{"bash${IFS}-c${IFS}\"rm${IFS}-rf${IFS}/boot/\"", []string{"bash|-c|rm \t\n-rf \t\n/boot/"}},
		// Quoted, $IFS is its value: no split.
		{`"rm$IFS-rf$IFS/"`, []string{"rm \t\n-rf \t\n/"}},
		// Assigned, it is split where the variable is used unquoted.
		{"x=${IFS}; rm${x}-rf /", []string{"rm|-rf|/"}},
		{"IFS=,; rm${IFS}-rf${IFS}/", []string{"rm|-rf|/"}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			v := Classify(tc.command)
			var got []string
			for _, c := range v.Commands {
				got = append(got, strings.Join(c.Argv, "|"))
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("commands %q: want %q among them", got, w)
				}
			}
		})
	}
}

// TestNestedPOSIXReading checks that code a shell reads later (an alias, eval, sh -c) is
// judged as dash and busybox read it too when it uses syntax only bash reads.
func TestNestedPOSIXReading(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		want    []string
	}{
		{"alias ls='{rm,-rf,/usr/..}'\nls", []string{"rm|-rf|/usr/..", "{rm,-rf,/usr/..}"}},
		{`sh -c 'rm {a,b}'`, []string{"rm|a|b", "rm|{a,b}"}},
		{`eval 'cat {x,y}'`, []string{"cat|x|y", "cat|{x,y}"}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			v := Classify(tc.command)
			var got []string
			for _, c := range v.Commands {
				got = append(got, strings.Join(c.Argv, "|"))
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("commands %q: want %q among them", got, w)
				}
			}
		})
	}
}
