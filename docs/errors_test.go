package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// codePackages are the packages whose stable codes errors.md lists: results' error_code,
// receipts' reason_code, the URL guard's reasons and the ledger's events.
var codePackages = []string{
	"pipeline", "approval", "pathpolicy", "fileops", "session", "engine", "webfetch",
	"terminal", "jobs", "urlguard", "receipt", "httpapi", "toolcall",
}

// TestEveryCodeIsDocumented reads the code the way a reviewer would look for codes — string
// constants named Code… or Event…, constants of type urlguard.Reason, and string literals
// given as an ErrorCode or ReasonCode field — plus every reason of shellrisk/rules.toml, and
// wants each as a row "| `code` |" of errors.md.
func TestEveryCodeIsDocumented(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("errors.md")
	if err != nil {
		t.Fatalf("read errors.md: %v", err)
	}
	rows := documentedCodes(string(page))
	codes := map[string]string{} // code → where it was found
	for _, pkg := range codePackages {
		for code, where := range codesIn(t, filepath.Join("..", pkg)) {
			codes[code] = where
		}
	}
	var rules struct {
		Reasons map[string]any `toml:"reasons"`
	}
	if _, err := toml.DecodeFile(filepath.Join("..", "shellrisk", "rules.toml"), &rules); err != nil {
		t.Fatalf("read the classifier rules: %v", err)
	}
	for code := range rules.Reasons {
		codes[code] = "shellrisk/rules.toml"
	}
	if len(codes) < 100 {
		t.Fatalf("found %d codes in the code: the scan is broken", len(codes))
	}
	names := make([]string, 0, len(codes))
	for c := range codes {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		if !rows[c] {
			t.Errorf("%s (%s): no row \"| `%s` |\" in errors.md", c, codes[c], c)
		}
	}
}

// codesIn parses the non-test Go files of dir and returns the codes they define or give.
func codesIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", dir, err)
	}
	out := map[string]string{}
	add := func(lit ast.Expr) {
		b, ok := lit.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return
		}
		if s, err := strconv.Unquote(b.Value); err == nil && s != "" {
			p := fset.Position(b.Pos())
			out[s] = filepath.Base(dir) + "/" + filepath.Base(p.Filename) + ":" + strconv.Itoa(p.Line)
		}
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if i >= len(n.Values) {
							break
						}
						isReason := false
						if id, ok := n.Type.(*ast.Ident); ok && id.Name == "Reason" {
							isReason = true
						}
						if isReason || strings.HasPrefix(name.Name, "Code") || strings.HasPrefix(name.Name, "Event") {
							add(n.Values[i])
						}
					}
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && (k.Name == "ErrorCode" || k.Name == "ReasonCode") {
						add(n.Value)
					}
				case *ast.AssignStmt:
					// f.rec.ReasonCode = "…", code = "…" in a function that returns it as ErrorCode.
					for i, lhs := range n.Lhs {
						if i >= len(n.Rhs) {
							break
						}
						switch l := lhs.(type) {
						case *ast.SelectorExpr:
							if l.Sel.Name == "ReasonCode" || l.Sel.Name == "ErrorCode" {
								add(n.Rhs[i])
							}
						case *ast.Ident:
							if l.Name == "code" {
								add(n.Rhs[i])
							}
						}
					}
				}
				return true
			})
		}
	}
	return out
}

var codeRow = regexp.MustCompile("^\\| `([a-z0-9_]+)`")

// documentedCodes returns the codes errors.md has a row for; a row may name several
// ("| `job_started`, `job_ended` |").
func documentedCodes(page string) map[string]bool {
	out := map[string]bool{}
	cell := regexp.MustCompile("`([a-z0-9_]+)`")
	for _, line := range strings.Split(page, "\n") {
		if !codeRow.MatchString(line) {
			continue
		}
		first := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			out[m[1]] = true
		}
	}
	return out
}
