package shellrisk

import (
	"sort"
	"strings"
)

// scanned is an argument list split into flags, flag values and operands.
type scanned struct {
	args     []arg
	flags    []string
	flagAt   []int // index in args of each flag
	values   []flagValue
	valueArg map[int]bool
	operands []arg
	// afterDashDash are the arguments after a "--".
	afterDashDash []arg
	dashDash      bool
	execs         [][]arg // find -exec … ;
}

// flagValue is a flag and the value given to it: the next argument, or attached (-ofile,
// --output=file).
type flagValue struct {
	flag string
	val  arg
	at   int // index in the arguments of the flag
}

// scan splits args the way getopt would. For a wrapper, options end at the first operand:
// what follows belongs to the wrapped command.
func (w *walker) scan(p *program, args []arg, wrapper bool) scanned {
	s := scanned{args: args}
	if len(args) > 0 {
		// Room for every argument as a flag or an operand: one allocation each, not a
		// growth per argument.
		s.flags = make([]string, 0, len(args))
		s.flagAt = make([]int, 0, len(args))
		s.operands = make([]arg, 0, len(args))
	}
	exprStarted := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		if t == "--" && !a.dynamic {
			s.dashDash = true
			s.afterDashDash = args[i+1:]
			if !p.expression {
				s.operands = append(s.operands, args[i+1:]...)
			}
			break
		}
		if p.execFlags[t] {
			exprStarted = true
			i = s.execFlag(args, i)
			continue
		}
		if p.wLongOptions && !a.dynamic && strings.HasPrefix(t, "-W") {
			i = s.wLong(p, args, i)
			continue
		}
		if isFlag(t) && !a.dynamic {
			// find's -H, -L and -P come before the roots; any other flag starts the expression.
			if p.expression && t != "-H" && t != "-L" && t != "-P" {
				exprStarted = true
			}
			s.flags = append(s.flags, t)
			s.flagAt = append(s.flagAt, i)
			if takesValue(p, t) && i+1 < len(args) {
				s.values = appendValues(s.values, valueKeys(p, t), args[i+1], i)
				s.markValue(i + 1)
				i++
			} else if name, v, ok := strings.Cut(t, "="); ok && (strings.HasPrefix(t, "--") || p.valueFlags[name]) {
				s.values = appendValues(s.values, longNames(p, name), attached(v), i)
			} else if k, v, ok := attachedShort(p, t); ok {
				s.values = append(s.values, flagValue{k, attached(v), i})
			}
			continue
		}
		if p.expression && (t == "(" || t == "!" || t == ")" || t == ",") {
			exprStarted = true
			continue
		}
		if wrapper {
			s.operands = append(s.operands, args[i:]...)
			break
		}
		if p.expression && exprStarted {
			continue
		}
		s.operands = append(s.operands, a)
	}
	return s
}

// execFlag records find's -exec (or -ok, -execdir…) at i with the command that follows it
// up to its ";" or "+", and returns the index of that terminator.
func (s *scanned) execFlag(args []arg, i int) int {
	s.flags = append(s.flags, args[i].text)
	s.flagAt = append(s.flagAt, i)
	j := i + 1
	for j < len(args) && args[j].text != ";" && args[j].text != "+" {
		j++
	}
	s.execs = append(s.execs, args[i+1:j])
	return j
}

// wLong records awk's -W OPTION at i as the long option it stands for (-W exec=FILE is
// --exec=FILE), and returns the index of its last argument.
func (s *scanned) wLong(p *program, args []arg, i int) int {
	v, at := args[i].text[2:], i
	if v == "" && i+1 < len(args) {
		i++
		s.markValue(i)
		v = args[i].text
		if args[i].dynamic {
			v = dynamicMark
		}
	}
	long := "--" + v
	s.flags = append(s.flags, long)
	s.flagAt = append(s.flagAt, at)
	if name, val, ok := strings.Cut(long, "="); ok {
		s.values = appendValues(s.values, longNames(p, name), attached(val), at)
	}
	return i
}

// markValue records that the argument at i is a flag's value.
func (s *scanned) markValue(i int) {
	if s.valueArg == nil {
		s.valueArg = map[int]bool{}
	}
	s.valueArg[i] = true
}

// appendValues records val as the value of each flag in keys.
func appendValues(vs []flagValue, keys []string, val arg, at int) []flagValue {
	for _, k := range keys {
		vs = append(vs, flagValue{k, val, at})
	}
	return vs
}

func isFlag(t string) bool {
	return len(t) > 1 && t[0] == '-'
}

// attached makes an argument of a value written inside a flag. A ~ in it is taken to be
// the home directory: some shells and programs expand it.
func attached(v string) arg {
	return arg{text: v, tilde: strings.HasPrefix(v, "~")}
}

// attachedShort splits -ofile into -o and file when -o takes a value.
//
// A program that reads its options whole (xxd -len, kill -KILL) takes a value attached
// only to the flag itself (xxd -l64): -ps is not -p with s.
func attachedShort(p *program, t string) (string, string, bool) {
	if strings.HasPrefix(t, "--") || len(p.valueFlags)+len(p.optValues) == 0 {
		return "", "", false
	}
	if p.wholeFlags {
		if k := t[:2]; len(t) > 2 && !p.valueFlags[t] && (p.valueFlags[k] || p.optValues[k]) {
			return k, t[2:], true
		}
		return "", "", false
	}
	for i := 1; i < len(t)-1; i++ {
		if k := "-" + t[i:i+1]; p.valueFlags[k] || p.optValues[k] {
			return k, t[i+1:], true
		}
	}
	return "", "", false
}

// longNames expands an abbreviated long flag (--out for --output) to the value flags it
// stands for, as getopt_long does. A prefix of several (tar's --fil: --file and
// --files-from) stands for each of them, since which one getopt takes depends on options
// the rules may not list; the flag itself is returned when it abbreviates none.
func longNames(p *program, t string) []string {
	if !strings.HasPrefix(t, "--") || p.valueFlags[t] {
		return []string{t}
	}
	if ks := prefixKeys(t, func(k string) bool { return p.valueFlags[k] }, p.valueFlags); len(ks) > 0 {
		return ks
	}
	return []string{t}
}

// minAbbrev is the shortest abbreviation of a long flag that is matched: getopt_long takes
// any unambiguous prefix, so --f is --file when no other long option starts with f. Which
// prefixes are ambiguous depends on options the rules may not list, so a prefix stands for
// every flag it could be; an ambiguous one only makes the program refuse to run.
const minAbbrev = 1

// prefixKeys returns the long flags in m that t abbreviates.
func prefixKeys[V any](t string, has func(string) bool, m map[string]V) []string {
	if len(t) < 2+minAbbrev {
		return nil
	}
	var out []string
	for k := range m {
		if strings.HasPrefix(k, "--") && strings.HasPrefix(k, t) && has(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// valueKeys names the flags whose value the next argument is: --out is --output, and in a
// cluster of short options (sort -uo FILE, tree -ao FILE) it is the last one, -o.
func valueKeys(p *program, t string) []string {
	if strings.HasPrefix(t, "--") || p.valueFlags[t] {
		return longNames(p, t)
	}
	return []string{"-" + t[len(t)-1:]}
}

// takesValue reports whether a flag consumes the next argument.
func takesValue(p *program, t string) bool {
	if len(p.valueFlags) == 0 {
		return false
	}
	if strings.HasPrefix(t, "--") {
		return !strings.Contains(t, "=") && p.valueFlags[longNames(p, t)[0]]
	}
	if p.valueFlags[t] {
		return true
	}
	if p.wholeFlags {
		return false
	}
	for i := 1; i < len(t); i++ {
		if p.valueFlags["-"+t[i:i+1]] {
			return i == len(t)-1
		}
	}
	return false
}

// flagKeys returns the rule keys in m a flag argument stands for: --force=x is --force,
// -rf is -r and -f, and a key that matches exactly (find's -delete) wins. With abbrev, a
// long flag also stands for the keys it abbreviates (--recur for --recursive); flags that
// make a call safer are never matched that way.
func flagKeys[V any](t string, m map[string]V, abbrev, whole bool) []string {
	if len(m) == 0 {
		return nil
	}
	if _, ok := m[t]; ok {
		return []string{t}
	}
	if strings.HasPrefix(t, "--") {
		name, _, _ := strings.Cut(t, "=")
		if _, ok := m[name]; ok {
			return []string{name}
		}
		if abbrev {
			return prefixKeys(name, func(string) bool { return true }, m)
		}
		return nil
	}
	if name, _, ok := strings.Cut(t, "="); ok {
		// Go-style -flag=value.
		if _, ok := m[name]; ok {
			return []string{name}
		}
	}
	if whole {
		return nil
	}
	var out []string
	for i := 1; i < len(t); i++ {
		k := "-" + t[i:i+1]
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// optionPart is the options of a short-option cluster without the value attached to its
// last one: -p../out is -p with ../out, not -p -. -. -/ -o -u -t.
func optionPart(p *program, f string) string {
	if strings.HasPrefix(f, "--") || len(f) <= 2 || p.wholeFlags {
		return f
	}
	for i := 1; i < len(f); i++ {
		if k := "-" + f[i:i+1]; p.valueFlags[k] || p.optValues[k] {
			return f[:i+1]
		}
	}
	return f
}

func hasAny(p *program, flags []string, m map[string]bool, abbrev bool) bool {
	if len(m) == 0 {
		return false
	}
	for _, f := range flags {
		if len(flagKeys(optionPart(p, f), m, abbrev, p.wholeFlags)) > 0 {
			return true
		}
	}
	return false
}

// descend follows subcommands (git push, docker compose up) to the most specific rule.
// It returns the rule, the arguments after the subcommand and the reason, which a
// subcommand without one inherits from its parent.
func (w *walker) descend(p *program, args []arg, seg string) (*program, []arg, string) {
	reason := p.reason
	for p.subs != nil {
		s := w.scan(p, args, true)
		if len(s.operands) == 0 {
			break
		}
		op := s.operands[0]
		sub := p.subs[op.text]
		if op.dynamic {
			sub = nil
		}
		if sub == nil {
			sub = p.subs["*"]
		}
		if sub == nil {
			break
		}
		w.flagReasons(p, s, seg)
		args = s.operands[1:]
		p = sub
		if p.reason != "" {
			reason = p.reason
		}
	}
	return p, args, reason
}

func (w *walker) flagReasons(p *program, s scanned, seg string) {
	for fi, f := range s.flags {
		if safeValue(p, s, s.flagAt[fi]) {
			continue
		}
		for _, k := range flagKeys(optionPart(p, f), p.flags, true, p.wholeFlags) {
			w.add(p.flags[k], seg)
		}
	}
	w.flagSetReasons(p, s, seg)
}

// flagSet is flags that carry a reason only together (git branch --delete --force).
type flagSet struct {
	parts  []map[string]bool // each part: one flag's spellings
	reason string
}

// flagSetReasons gives the reason of every flag set all of whose parts the call has:
// git branch --delete --force is git branch -D, and -d -f, -df and --del --f are too.
func (w *walker) flagSetReasons(p *program, s scanned, seg string) {
	for _, fs := range p.flagSets {
		all := true
		for _, part := range fs.parts {
			if !hasAny(p, s.flags, part, true) {
				all = false
				break
			}
		}
		if all {
			w.add(fs.reason, seg)
		}
	}
}

// safeValue reports whether the flag at index i of s.args is given a value with which it
// carries none of its reasons (git -c user.name=x).
func safeValue(p *program, s scanned, i int) bool {
	if len(p.safeValues) == 0 {
		return false
	}
	for _, v := range s.values {
		if v.at != i || v.val.dynamic {
			continue
		}
		t := strings.ToLower(v.val.text)
		for _, g := range p.safeValues[v.flag] {
			if globMatch(g, t) {
				return true
			}
		}
	}
	return false
}
