package shellrisk

import (
	"slices"
	"strings"
	"testing"
)

// TestShellReadings checks, family by family, that the verdict lists what each shell the
// backends run (bash, bash as sh, dash, busybox sh) really executes, as the differential
// harness saw them do it, or fails closed where the command cannot be read faithfully.
// Argument vectors are written with | between the words and … for a word only known at
// run time; want must be among the verdict's commands, never must not be, and closed
// says the verdict must fail closed.
func TestShellReadings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		family, command string
		want, never     []string
		closed          bool
	}{
		// busybox runs process substitutions, and reads their code as POSIX sh: no brace
		// expansion, time is a program; dash refuses them.
		{family: "procsubst", command: "cat <(time chmod -R 777 /tmp/p\n)", want: []string{"chmod|-R|777|/tmp/p", "time|chmod|-R|777|/tmp/p", "cat|/dev/fd/63"}},
		{family: "procsubst", command: "cat <({rm,--recursive,--force,/etc}\n)", want: []string{"rm|--recursive|--force|/etc", "{rm,--recursive,--force,/etc}"}},
		{family: "procsubst", command: "tee >(time kubectl exec -it web -- rm -rf /\n)", want: []string{"time|kubectl|exec|-it|web|--|rm|-rf|/"}},
		{family: "procsubst", command: "diff <(ls {a,b}) <(cat <(time ls))", want: []string{"ls|{a,b}", "ls|a|b", "time|ls", "diff|/dev/fd/63|/dev/fd/63"}},
		{family: "procsubst", command: "{rm,-rf,/tmp/p} <(ls)", want: []string{"{rm,-rf,/tmp/p}|/dev/fd/63", "rm|-rf|/tmp/p|…"}},
		// {fd}>f names a descriptor in bash; to dash and busybox {fd} is a word.
		{family: "named-fd", command: "{x}>f rm -rf /tmp/p", want: []string{"rm|-rf|/tmp/p", "{x}|rm|-rf|/tmp/p"}},
		{family: "named-fd", command: "{x}>>f rm -rf /tmp/p", want: []string{"{x}|rm|-rf|/tmp/p"}},
		{family: "named-fd", command: "{x[1]}>&- rm -rf /tmp/p", want: []string{"{x[1]}|rm|-rf|/tmp/p"}},
		{family: "named-fd", command: "echo a {x}>f b", want: []string{"echo|a|b", "echo|a|{x}|b"}},
		// &> is one redirection to bash and busybox, a background job and a redirection to
		// dash.
		{family: "amp-redirect", command: "echo x &>/dev/null rm -rf /tmp/p", want: []string{"echo|x|rm|-rf|/tmp/p", "rm|-rf|/tmp/p"}},
		// A number before &> is a word to bash and a descriptor to busybox.
		{family: "amp-redirect", command: "ls 2&>f rm -rf /tmp/p", closed: true},
		{family: "amp-redirect", command: "ls 2&>>f", closed: true},
		{family: "amp-redirect", command: "ls 2 &>f", want: []string{"ls|2"}},
		// bash starts a new word after the - of >&-: the parser does not.
		{family: "close-fd", command: "rm -rf /tmp/p >&-\v#;rm -rf /tmp/p", closed: true},
		{family: "close-fd", command: "rm -rf /tmp/p >&-x", closed: true},
		{family: "close-fd", command: "rm -rf /tmp/p <&-'x'", closed: true},
		{family: "close-fd", command: "rm -rf /tmp/p 2>&--", closed: true},
		{family: "close-fd", command: "rm -rf /tmp/p >&-$x", closed: true},
		{family: "close-fd", command: "ls >&- 2>&-", want: []string{"ls"}},
		{family: "close-fd", command: "ls >&- x", want: []string{"ls|x"}},
		// dash's exec takes no options: it runs a program named by the first word.
		{family: "exec-options", command: "exec -a foo rm -rf /tmp/p", want: []string{"rm|-rf|/tmp/p", "-a|foo|rm|-rf|/tmp/p"}},
		{family: "exec-options", command: "exec -cl rm -rf /tmp/p", want: []string{"rm|-rf|/tmp/p", "-cl|rm|-rf|/tmp/p"}},
		{family: "exec-options", command: "exec -- rm -rf /tmp/p", want: []string{"rm|-rf|/tmp/p", "--|rm|-rf|/tmp/p"}},
		{family: "exec-options", command: "shopt -s expand_aliases\nalias ls='exec -a foo rm -rf /tmp/p'\nls", want: []string{"ls", "-a|foo|rm|-rf|/tmp/p"}},
		{family: "exec-options", command: "exec rm -rf /tmp/p", want: []string{"rm|-rf|/tmp/p"}, never: []string{"-rf|/tmp/p"}},
		{family: "exec-options", command: "eval -- rm -rf /tmp/p", want: []string{"rm|-rf|/tmp/p", "--|rm|-rf|/tmp/p"}},
		{family: "exec-options", command: "eval -- 'rm -rf /tmp/p'", want: []string{"rm|-rf|/tmp/p", "--|rm|-rf|/tmp/p"}},
		// Built-ins that call code with more words: compgen -C CMD adds three, mapfile -C two.
		{family: "callback", command: "compgen${IFS}-C${IFS}'rm${IFS}-rf${IFS}~'${IFS}x", want: []string{"rm|-rf|~|…|…|…"}},
		{family: "callback", command: "x=y; compgen -C 'rm -rf /tmp/p' x", want: []string{"rm|-rf|/tmp/p|…|…|…"}, never: []string{"rm|-rf|/tmp/p|y|y|y"}},
		{family: "callback", command: "mapfile -C 'rm -rf /tmp/p' -c 1 x", want: []string{"rm|-rf|/tmp/p|…|…"}},
		// IFS decides where an unquoted value splits: empty, nowhere; unknown, anywhere.
		{family: "ifs", command: "IFS=; x='rm -rf /tmp/p'; $x", want: []string{"rm -rf /tmp/p"}, never: []string{"rm|-rf|/tmp/p"}},
		{family: "ifs", command: "IFS=:; x=a:b; ls $x", want: []string{"ls|a|b"}},
		{family: "ifs", command: "IFS=$1; x='a b'; ls $x", want: []string{"ls|…"}, never: []string{"ls|a|b", "ls|a b"}},
		{family: "ifs", command: "if true; then IFS=:; fi; x=a:b; ls $x", want: []string{"ls|…"}},
		{family: "ifs", command: "IFS=:; sh -c 'x=\"a b\"; ls $x'", want: []string{"ls|a|b"}},
		{family: "ifs", command: "x=; $x rm -rf /tmp/p", want: []string{"rm|-rf|/tmp/p"}},
		// A $ that starts no expansion turns bash's field splitting off for the word.
		{family: "ifs", command: "x='a b'; ls $x$ y", want: []string{"ls|…|y"}},
		{family: "ifs", command: "x='a b'; ls $x\\$", want: []string{"ls|a|b$"}},
		// A delimiter that is not white space ends a field, an empty one too.
		{family: "ifs", command: "IFS=:; x=a::b; ls $x", want: []string{"ls|a||b"}},
		{family: "ifs", command: "IFS=:; x=:a:b:; ls $x", want: []string{"ls||a|b"}},
		{family: "ifs", command: "IFS=:; x=:a; ls pre$x", want: []string{"ls|pre|a"}},
		{family: "ifs", command: "IFS=' :'; x=' a : : b '; ls $x", want: []string{"ls|a||b"}},
		{family: "ifs", command: "x='  a  b '; ls p$x", want: []string{"ls|p|a|b"}},
		// $'…': bash decodes C escapes (a NUL ends the word), dash reads a $ and a string,
		// busybox decodes fewer escapes and drops a NUL.
		{family: "ansi-c", command: `$'\u0072m' -rf /tmp/p`, want: []string{"rm|-rf|/tmp/p", `$\u0072m|-rf|/tmp/p`, `\u0072m|-rf|/tmp/p`}},
		{family: "ansi-c", command: `$'rm\x00x' -rf /`, want: []string{"rm|-rf|/", `$rm\x00x|-rf|/`, "rmx|-rf|/"}},
		{family: "ansi-c", command: `$'r\cm' -rf /tmp/p`, want: []string{"r\r|-rf|/tmp/p", `r\cm|-rf|/tmp/p`}},
		{family: "ansi-c", command: `$'\e' ; rm -rf /tmp/p`, want: []string{"\x1b", `$\e`, `\e`}},
		{family: "ansi-c", command: `ls a$'\x41\0b'c`, want: []string{"ls|aAc", `ls|a$\x41\0bc`, "ls|aAbc"}},
		{family: "ansi-c", command: `ls $'caf\u00e9'`, want: []string{"ls|…", `ls|caf\u00e9`}},
		// Bytes this package uses as marks, decoded from $'…', are not read.
		{family: "ansi-c", command: `ls $'0\cC' $'\x01' $'\002'`, want: []string{"ls|…|…|…"}},
		// An alias whose text holds a here-document is read with the input after the call.
		{family: "alias-input", command: "shopt -s expand_aliases\nalias ls='cat <<'\\''EOF'\\''\n$(rm -rf /tmp/p)\nEOF'\nls", closed: true},
		{family: "alias-input", command: "shopt -s expand_aliases\nalias ls='python3 <<'\\''EOF'\\''\nimport os\nos.system('\\''rm -rf /'\\'')\nEOF'\nls", closed: true},
		{family: "alias-input", command: "alias x='echo \\'\nx y", closed: true},
		{family: "alias-input", command: "alias x='cat <<-E'\nx", closed: true},
		{family: "alias-input", command: "alias x='cat <<< y'\nx", want: []string{"x", "cat"}},
		// Each reading of an alias from the same state: bash without expand_aliases never
		// defines the function the text defines.
		{family: "alias-input", command: "alias ls='ls() { rm -rf /tmp/p; }; ls'\nls", want: []string{"ls", "rm|-rf|/tmp/p"}},
		// Braces with quotes inside are still braces to bash and text to dash.
		{family: "braces", command: "{rm,-r''f,/tmp/p}", want: []string{"rm|-rf|/tmp/p", "{rm,-rf,/tmp/p}"}},
		// A quoted empty part is a field of its own.
		{family: "ifs", command: "ls${IFS}''${IFS}x", want: []string{"ls||x"}},
		{family: "ifs", command: "y=; ls${IFS}\"$y\"${IFS}x", want: []string{"ls||x"}},
		// The marks this package writes into words, and a continuation after $.
		{family: "lexing", command: "rm${IFS}-rf${IFS}/boot/\x01rm -rf /tmp/p", closed: true},
		{family: "lexing", command: "git${IFS}push${IFS}--force$\\\n{IFS}origin", closed: true},
		// A value read at run time, evaluated as a number, runs the subscripts it holds.
		{family: "arith-data", command: "read x; echo $((x))", want: []string{"…"}},
		{family: "arith-data", command: "read x; a[x]=1", want: []string{"…"}},
		{family: "arith-data", command: "x=$(cat f); echo ${a[$x]}", want: []string{"…"}},
		{family: "arith-data", command: "read x; [[ $x -eq 1 ]]", want: []string{"…"}},
		{family: "arith-data", command: "for i in $(cat f); do echo $((i)); done", want: []string{"…"}},
		{family: "arith-data", command: "read x; declare -i y=x", want: []string{"…"}},
		{family: "arith-data", command: "echo $(($1))", want: []string{"…"}},
		{family: "arith-data", command: "for i in $(seq 3); do echo $((i*2)); done", never: []string{"…"}},
		{family: "arith-data", command: "n=$(grep x f | wc -l); echo $((n+1))", never: []string{"…"}},
		{family: "arith-data", command: "i=0; while :; do i=$((i+1)); done", never: []string{"…"}},
		// function f { is a program named function to dash.
		{family: "function", command: "{ function f { f | f & }; f\n}", want: []string{"function|f|{|f", "f"}},
		// dash and busybox run a substitution's code a command at a time, up to a syntax
		// error in it: a POSIX parse that fails inside one fails closed.
		{family: "function", command: "echo `function 0 { 0&}\n`", closed: true},
		{family: "function", command: "x=$(function f { rm -rf /tmp/p& }); ls", closed: true},
		{family: "function", command: "eval 'function f { ls& }'", want: []string{"ls"}},
		// A function that defines another of its name calls that one.
		{family: "function", command: "ls() { ls() { rm -rf /tmp/p; }; ls\n}\nls", want: []string{"rm|-rf|/tmp/p"}},
		// a[i]=1 and a+=1 are assignments to bash and programs to dash and busybox.
		{family: "subscript", command: "x='a[$(rm -rf /tmp/p)]'; a[x]=1", want: []string{"rm|-rf|/tmp/p", "a[x]=1"}},
		{family: "subscript", command: "a+=1 ls", want: []string{"ls", "a+=1|ls"}},
	} {
		t.Run(tc.family+"/"+tc.command, func(t *testing.T) {
			t.Parallel()
			v := Classify(tc.command)
			var got []string
			for _, c := range v.Commands {
				got = append(got, strings.ReplaceAll(strings.Join(c.Argv, "|"), UnknownMark, "…"))
			}
			if v.FailedClosed() != tc.closed {
				t.Errorf("failed closed %v, want %v (reasons %v)", v.FailedClosed(), tc.closed, v.Reasons)
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
		})
	}
}
