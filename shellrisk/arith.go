package shellrisk

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// bash evaluates the value of a variable used as a number as an arithmetic expression,
// and an array subscript in it expands: with x='a[$(rm -rf ~)]', $((x)), a[x]=1, ${a[x]},
// ${s:x}, [[ x -eq 1 ]] and for ((i=x;;)) all run rm. A value the command assigned is
// judged where it is assigned (subscriptCode). A value that comes from data read at run
// time — read, mapfile, getopts, printf -v, a command substitution, a positional
// parameter, the items of a loop over such words — may hold such a subscript, so an
// arithmetic use of it runs code only known at run time: dynamic_command, with a command
// of unknown program in the verdict. A number by construction ($((…)), $#, ${#x}, $?, the
// keys of an array) is not data.

// numberParams are the special parameters and shell variables whose value is a number.
var numberParams = map[string]bool{
	"#": true, "?": true, "$": true, "!": true, "RANDOM": true, "SRANDOM": true, "SECONDS": true,
	"LINENO": true, "BASHPID": true, "PPID": true, "UID": true, "EUID": true, "OPTIND": true,
	"EPOCHSECONDS": true, "HISTCMD": true, "SHLVL": true,
}

// markData records that name holds data read at run time.
func (w *walker) markData(name string) {
	w.st.data = withKey(w.st.data, name)
}

// isData reports whether the parameter holds data read at run time: a positional
// parameter, or a variable the command filled from data.
func (w *walker) isData(name string) bool {
	if name == "@" || name == "*" || name != "" && name[0] >= '0' && name[0] <= '9' {
		return true
	}
	return w.st.data[name]
}

// fromData reports whether a word's value comes from data read at run time.
func (w *walker) fromData(word *syntax.Word) bool {
	if word == nil {
		return false
	}
	found := false
	syntax.Walk(word, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			found = !numberOutput(x)
			return false
		case *syntax.ProcSubst:
			found = true
		case *syntax.ParamExp:
			if x.Param != nil && !x.Length && !(x.Excl && x.Index != nil) && w.isData(x.Param.Value) {
				found = true
			}
		case *syntax.ArithmExp:
			return false
		}
		return !found
	})
	return found
}

// numberOutput reports whether a command substitution prints only a number: seq with
// numbers, nproc, date +%s, wc counting its standard input, alone or at the end of a
// pipeline. Its output is no code.
func numberOutput(cs *syntax.CmdSubst) bool {
	if len(cs.Stmts) != 1 || cs.Stmts[0].Background {
		return false
	}
	cmd := cs.Stmts[0].Cmd
	for {
		b, ok := cmd.(*syntax.BinaryCmd)
		if !ok || b.Op != syntax.Pipe {
			break
		}
		cmd = b.Y.Cmd
	}
	call, ok := cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || len(call.Assigns) > 0 {
		return false
	}
	words := make([]string, len(call.Args))
	for i, a := range call.Args {
		if words[i] = a.Lit(); words[i] == "" {
			return false
		}
	}
	switch words[0] {
	case "nproc":
		return len(words) == 1
	case "seq":
		for _, a := range words[1:] {
			if !isNumber(strings.TrimPrefix(a, "-")) {
				return false
			}
		}
		return true
	case "date":
		return len(words) == 2 && words[1] == "+%s"
	case "wc":
		for _, a := range words[1:] {
			if a != "-l" && a != "-c" && a != "-w" && a != "-m" {
				return false
			}
		}
		return true
	}
	return false
}

// arithData judges the words an arithmetic expression evaluates: a name or a $name whose
// value is data, a positional parameter, or a command substitution's output.
func (w *walker) arithData(x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	found := ""
	syntax.Walk(x, func(n syntax.Node) bool {
		if found != "" {
			return false
		}
		word, ok := n.(*syntax.Word)
		if !ok {
			return true
		}
		if lit := word.Lit(); lit != "" && w.nameIsData(lit, 0) || w.fromData(word) {
			found = w.text(word)
		}
		return found == ""
	})
	if found != "" {
		w.add(codeDynamicCommand, found)
		w.record("", []arg{{text: dynamicMark, dynamic: true}})
	}
}

// nameIsData follows a name through the known values of variables (x=y; y holds data) to
// data, as bash's evaluation of a variable's value as an expression does.
func (w *walker) nameIsData(name string, depth int) bool {
	base, _, _ := strings.Cut(name, "[")
	if !isAssignment(base+"=") || depth > 8 {
		return false
	}
	if w.isData(base) {
		return true
	}
	if v, ok := w.st.vars[base]; ok && !w.st.noVars && v.text != name {
		return w.nameIsData(strings.TrimSpace(v.text), depth+1)
	}
	return false
}

// arithWord judges a word bash evaluates as a number: an operand of [[ -eq ]] and the like.
func (w *walker) arithWord(word *syntax.Word) {
	if word == nil {
		return
	}
	if lit := word.Lit(); lit != "" && w.nameIsData(lit, 0) || w.fromData(word) {
		w.add(codeDynamicCommand, w.text(word))
		w.record("", []arg{{text: dynamicMark, dynamic: true}})
	}
}

// arithTest reports whether a [[ ]] operator compares numbers.
func arithTest(op syntax.BinTestOperator) bool {
	switch op {
	case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
		return true
	}
	return false
}
