package getopt

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
)

// expansions are the short options a program documents as shorthand for several:
// git-branch(1) "-D: Shortcut for --delete --force", and -M and -C alike.
var expansions = map[string]map[string][]string{
	"git branch": {"D": {"delete", "force"}, "M": {"move", "force"}, "C": {"copy", "force"}},
}

// DashDashChanges are the programs for which -- before the operands changes what they
// mean: git reads the words after it as paths, not revisions.
func DashDashChanges(prog string) bool { return strings.HasPrefix(prog, "git ") }

// PlainWord is a word the respelling can move around without quoting: no expansion, no
// tilde (a ~ after --opt= is not expanded the way a word-initial one is).
var PlainWord = regexp.MustCompile(`^[A-Za-z0-9_./=:,%+@-]+$`)

// Table is one program's options, by name.
type Table struct {
	prog  string
	opts  []Option
	short map[string]int
	long  map[string]int
}

// NewTable indexes a program's options by name.
func NewTable(prog string, opts []Option) *Table {
	tb := &Table{prog: prog, opts: opts, short: map[string]int{}, long: map[string]int{}}
	for i, o := range opts {
		if o.Short != "" {
			tb.short[o.Short] = i
		}
		if o.Long != "" {
			tb.long[o.Long] = i
		}
	}
	return tb
}

// LookupLong finds a long option by its name or an unambiguous prefix of it, as
// getopt_long does (an exact name wins over longer ones it prefixes).
func (tb *Table) LookupLong(name string) (int, bool) {
	if i, ok := tb.long[name]; ok {
		return i, true
	}
	found := -1
	for l, i := range tb.long {
		if strings.HasPrefix(l, name) {
			if found >= 0 && found != i {
				return 0, false
			}
			found = i
		}
	}
	return found, found >= 0
}

// MinPrefix is the shortest prefix of a long name that LookupLong resolves to it.
func (tb *Table) MinPrefix(name string) int {
	for n := 1; n < len(name); n++ {
		if i, ok := tb.LookupLong(name[:n]); ok && tb.opts[i].Long == name {
			return n
		}
	}
	return len(name)
}

// Given is one option as the parser read it.
type Given struct {
	opt      int // index in the Table
	value    string
	hasValue bool
}

// Args is what the model makes of a command's arguments: options up to the first
// operand (or --), then the operands.
type Args struct {
	opts     []Given
	operands []string
}

func (p Args) Key() string { return fmt.Sprintf("%v|%q", p.opts, p.operands) }

// Parse reads args with tb; false when a word is not an option tb knows or an
// argument is missing.
func (tb *Table) Parse(args []string) (Args, bool) {
	var p Args
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.operands = append(p.operands, args[i+1:]...)
			return p, true
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			k, ok := tb.LookupLong(name)
			if !ok {
				return p, false
			}
			o := tb.opts[k]
			switch {
			case o.Arg == "none" && hasValue:
				return p, false
			case o.Arg == "required" && !hasValue:
				if i+1 == len(args) {
					return p, false
				}
				i++
				value, hasValue = args[i], true
			}
			p.opts = append(p.opts, tb.expand(k, value, hasValue)...)
		case strings.HasPrefix(a, "-") && a != "-":
		cluster:
			for j := 1; j < len(a); j++ {
				k, ok := tb.short[a[j:j+1]]
				if !ok {
					return p, false
				}
				rest := a[j+1:]
				switch tb.opts[k].ShortArgKind() {
				case "none":
					p.opts = append(p.opts, tb.expand(k, "", false)...)
					continue
				case "optional":
					p.opts = append(p.opts, tb.expand(k, rest, rest != "")...)
					break cluster
				default:
					if rest == "" {
						if i+1 == len(args) {
							return p, false
						}
						i++
						rest = args[i]
					}
					p.opts = append(p.opts, tb.expand(k, rest, true)...)
					break cluster
				}
			}
		default:
			p.operands = append(p.operands, args[i:]...)
			return p, true
		}
	}
	return p, true
}

// expand is one option read, or the options it is shorthand for.
func (tb *Table) expand(k int, value string, hasValue bool) []Given {
	if exp, ok := expansions[tb.prog][tb.opts[k].Short]; ok && tb.opts[k].Long == "" {
		var out []Given
		for _, l := range exp {
			if i, ok := tb.long[l]; ok {
				out = append(out, Given{opt: i})
			}
		}
		return out
	}
	return []Given{{opt: k, value: value, hasValue: hasValue}}
}

// Style says how Respell writes the options.
type Style int

const (
	StyleLong   Style = iota // every option by its full long name, --opt=value
	StyleShort               // every option by its short name where it has one, -o value
	StyleRandom              // each a random spelling: prefixes, clusters, = or not, --
)

// Respell writes p's options again in a style; nil when it cannot.
func (tb *Table) Respell(p Args, style Style, r *rand.Rand) []string {
	var out []string
	clusterOpen := false // the last word is a cluster of short options that takes more
	for _, g := range p.opts {
		o := tb.opts[g.opt]
		useLong := o.Long != "" && (o.Short == "" || style == StyleLong || style == StyleRandom && r.IntN(2) == 0)
		if useLong {
			clusterOpen = false
			name := o.Long
			if style == StyleRandom && r.IntN(2) == 0 {
				n := tb.MinPrefix(name)
				name = name[:n+r.IntN(len(name)-n+1)]
			}
			switch {
			case !g.hasValue:
				out = append(out, "--"+name)
			case o.Arg == "required" && style != StyleLong && r != nil && r.IntN(2) == 0:
				out = append(out, "--"+name, g.value)
			case o.Arg == "none":
				return nil
			default:
				out = append(out, "--"+name+"="+g.value)
			}
			continue
		}
		if o.Short == "" {
			return nil
		}
		word := "-" + o.Short
		if clusterOpen && style == StyleRandom && r.IntN(2) == 0 {
			word = out[len(out)-1] + o.Short
			out = out[:len(out)-1]
		}
		clusterOpen = !g.hasValue
		switch {
		case !g.hasValue:
			out = append(out, word)
		case o.ShortArgKind() == "optional" || g.value == "":
			if g.value == "" {
				return nil
			}
			out = append(out, word+g.value)
		case style == StyleRandom && r.IntN(2) == 0:
			out = append(out, word+g.value)
		default:
			out = append(out, word, g.value)
		}
	}
	if len(p.operands) > 0 && style == StyleRandom && !DashDashChanges(tb.prog) && r.IntN(2) == 0 {
		out = append(out, "--")
	}
	return append(out, p.operands...)
}
