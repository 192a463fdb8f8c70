package differential

import (
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// payload is what a mutation that needs a second command appends: harmless in the
// container (rm is a recorder there), and one the classifier must see wherever the shell
// runs it.
const payload = "rm -rf /tmp/p"

// spaces are the bytes and runes a mutation puts where a space was: the shells split words
// only on space, tab and newline; everything else must be read as part of a word, or the
// command refused.
var spaces = []string{"\t", "\v", "\f", "\r", "\x01", "\x1b", "\x7f", "\u00a0", "\u0085", "\u1680", "\u2000", "\u2028", "\u200b", "\u3000", "\ufeff"}

// mutation is one way to change a command; families are named for the report.
type mutation struct {
	Name string
	Cmd  string
}

// mutators make one variant each. They are families of what makes a lexer disagree with a
// shell: comments and the characters around them, quoting and continuations, control and
// Unicode characters, code the shell runs later (aliases, functions named like programs,
// traps, here-docs), and expansions (IFS, braces, arithmetic).
var mutators = []struct {
	name string
	fn   func(cmd string, r *rand.Rand) string
}{
	// A carriage return or other byte before # makes it part of a word, not a comment.
	{"cr-hash", func(c string, r *rand.Rand) string {
		return c + pick(r, []string{"\r", "\v", "\f", "\x01"}) + "#;" + payload
	}},
	{"crlf", func(c string, r *rand.Rand) string { return strings.ReplaceAll(c+"\n"+payload, "\n", "\r\n") }},
	// # right after ) or an array assignment.
	{"paren-hash", func(c string, r *rand.Rand) string { return "(" + c + ")#;" + payload }},
	{"array-hash", func(c string, r *rand.Rand) string { return "a=(x)#;" + payload + "\n" + c }},
	{"hash-in-word", func(c string, r *rand.Rand) string { return c + " x#y;" + payload }},
	// A line continuation anywhere: inside a word, a quote, $'…', a comment.
	{"continuation", func(c string, r *rand.Rand) string { return insertAt(c, r, "\\\n") }},
	{"continuation-cr", func(c string, r *rand.Rand) string { return insertAt(c, r, "\\\r\n") }},
	{"ansi-c-continuation", func(c string, r *rand.Rand) string { return "echo $'a\\\n';" + c + "#'\n" + payload }},
	{"comment-continuation", func(c string, r *rand.Rand) string { return c + " # x\\\n" + payload }},
	// Control and Unicode characters where a space was.
	{"space", func(c string, r *rand.Rand) string { return replaceSpace(c, r, pick(r, spaces)) }},
	{"nul", func(c string, r *rand.Rand) string { return insertAt(c, r, "\x00") }},
	{"nul-tail", func(c string, r *rand.Rand) string { return c + "\x00;" + payload }},
	// Quoting that splits or wraps a word.
	{"split-quote", func(c string, r *rand.Rand) string {
		return insertInWord(c, r, pick(r, []string{"''", `""`, `\`, "$''", `$""`}))
	}},
	{"ansi-c", func(c string, r *rand.Rand) string { return ansiC(c, r) }},
	// Code the shell runs later than it reads it.
	{"alias", func(c string, r *rand.Rand) string { return "alias ls=" + sq(c) + "\nls" }},
	{"alias-bash", func(c string, r *rand.Rand) string { return "shopt -s expand_aliases\nalias ls=" + sq(c) + "\nls" }},
	{"function", func(c string, r *rand.Rand) string {
		return pick(r, []string{"ls", "cat", "echo", "command", "true", "test", "["}) + "() { " + c + "\n}\n" + "ls; cat; echo; command ls; true; test; ["
	}},
	{"trap", func(c string, r *rand.Rand) string { return "trap " + sq(c) + " EXIT" }},
	{"eval", func(c string, r *rand.Rand) string { return "eval " + sq(c) }},
	{"heredoc", func(c string, r *rand.Rand) string {
		return pick(r, []string{"cat", "sh", "bash", ":"}) + " <<" + pick(r, []string{"EOF", "'EOF'", "-EOF", `"EOF"`}) + "\n" + c + "\nEOF\n" + payload
	}},
	{"heredoc-end", func(c string, r *rand.Rand) string {
		return "cat <<EOF\n" + pick(r, []string{"EOF ", " EOF", "EOF\r", "\tEOF", "EOF;"}) + "\n" + c + "\nEOF"
	}},
	{"subst", func(c string, r *rand.Rand) string {
		return pick(r, []string{"echo $(", "echo `", "cat <(", "tee >(", "x=$("}) + c + "\n" + pick(r, []string{")", "`", ")", ")", ")"})
	}},
	// Expansions.
	{"ifs", func(c string, r *rand.Rand) string {
		if !strings.ContainsAny(c, "'\"\\$`") {
			return "IFS=,;x=" + strings.ReplaceAll(c, " ", ",") + ";$x"
		}
		return strings.ReplaceAll(c, " ", "${IFS}")
	}},
	{"brace", func(c string, r *rand.Rand) string {
		if !strings.ContainsAny(c, "'\"\\$`{},;|&<>()\n") && strings.Contains(c, " ") {
			return "{" + strings.ReplaceAll(c, " ", ",") + "}"
		}
		return "{ " + c + "\n}"
	}},
	{"arith", func(c string, r *rand.Rand) string {
		return "x='a[$(" + strings.ReplaceAll(c, "'", `'\''`) + ")]'; " + pick(r, []string{"echo $((x))", "[[ $x -eq 0 ]]", "(( x ))", "declare -i y=x", "let x"})
	}},
	{"tilde", func(c string, r *rand.Rand) string { return "~/" + c }},
	{"case", func(c string, r *rand.Rand) string { return "case x in (x) " + c + "\n;; esac" }},
}

// mutations returns n variants of cmd, chosen by seed, each from a different family.
func mutations(cmd string, seed uint64, n int) []mutation {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	perm := r.Perm(len(mutators))
	var out []mutation
	for _, i := range perm[:min(n, len(perm))] {
		m := mutators[i]
		out = append(out, mutation{Name: m.name, Cmd: m.fn(cmd, r)})
	}
	return out
}

func pick(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }

// sq quotes s in single quotes for the shell.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// insertAt inserts s at a random rune boundary of c.
func insertAt(c string, r *rand.Rand, s string) string {
	if c == "" {
		return s
	}
	i := r.IntN(len(c) + 1)
	for i < len(c) && !utf8.RuneStart(c[i]) {
		i++
	}
	return c[:i] + s + c[i:]
}

// replaceSpace replaces one space of c with s, or appends s and the payload.
func replaceSpace(c string, r *rand.Rand, s string) string {
	var at []int
	for i := range len(c) {
		if c[i] == ' ' {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return c + s + payload
	}
	i := at[r.IntN(len(at))]
	return c[:i] + s + c[i+1:]
}

// insertInWord inserts s between two letters of c.
func insertInWord(c string, r *rand.Rand, s string) string {
	var at []int
	for i := 1; i < len(c); i++ {
		if isLetter(c[i-1]) && isLetter(c[i]) {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return c
	}
	i := at[r.IntN(len(at))]
	return c[:i] + s + c[i:]
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// ansiC writes the first word of c as $'…' with one letter as a \x escape, or, when the
// word is not plain, puts a continuation inside a $'…' word in front.
func ansiC(c string, r *rand.Rand) string {
	w, rest, _ := strings.Cut(c, " ")
	if w == "" || strings.ContainsFunc(w, func(x rune) bool { return !(x >= 'a' && x <= 'z' || x >= '0' && x <= '9' || x == '-' || x == '_') }) {
		return "$'x\\\ny' " + c
	}
	i := r.IntN(len(w))
	word := "$'" + w[:i] + `\x` + strings.ToLower(hexByte(w[i])) + w[i+1:] + "'"
	if rest == "" {
		return word
	}
	return word + " " + rest
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&0xf]})
}
