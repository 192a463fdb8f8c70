package shellrisk

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

var updateGolden = flag.Bool("update", false, "rewrite the generated files: testdata/verdicts.golden from the classifier of the day (TestVerdictsGolden), rules_data.go from rules.toml (TestRulesData)")

// goldenContexts are the contexts every command of the golden is judged in: the zero
// context, an unconfined session with the policy's paths, and a confined one whose sandbox
// hides the secrets, each with the URL guard's seam set.
func goldenContexts() []Context {
	const state = "/home/u/.local/state/airlock"
	rich := Context{
		Workspace:   "/home/u/ws",
		WriteRoots:  []string{".", "/srv/out"},
		ReadRoots:   []string{"/usr/share/doc"},
		DenyNames:   []string{".env", "*.pem", ".git/hooks", "id_*"},
		Protected:   []string{"/home/u/ws/airlock.toml", state + "/receipts.jsonl", state + "/sessions", state + "/approvals"},
		HostAllowed: func(h string) bool { return h == "example.com" || strings.HasSuffix(h, ".golang.org") },
		Scratch:     []string{"/tmp/airlock-session-1"},
		TMPDIR:      "/tmp/airlock-session-1",
		Unconfined:  true,
	}
	confined := rich
	confined.Unconfined = false
	confined.SecretsHidden = true
	return []Context{{}, rich, confined}
}

// goldenCommands gathers every command the package's test data holds: the bypass corpus,
// the agent commands, the fuzz seeds, the differential harness's seeds, and the benchmark's
// inputs.
func goldenCommands(t *testing.T) []string {
	t.Helper()
	var cmds []string
	for _, tc := range loadCorpus(t) {
		cmds = append(cmds, tc.command)
	}
	cmds = append(cmds, tsvCommands(t, "testdata/agent_commands.tsv", 3)...)
	cmds = append(cmds, tsvCommands(t, "differential/testdata/seeds.txt", 1)...)
	cmds = append(cmds, tsvCommands(t, "differential/testdata/effects_seeds.txt", 1)...)
	for _, dir := range []string{"testdata/fuzz/FuzzClassify", "testdata/fuzz/FuzzLexing"} {
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			cmds = append(cmds, fuzzSeedStrings(t, f)...)
		}
	}
	return append(cmds, typical, longScript())
}

// tsvCommands reads the last of n tab-separated fields of each line that is not a comment;
// "go:" starts a Go string literal.
func tsvCommands(t *testing.T, name string, n int) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", n)
		cmd := parts[len(parts)-1]
		if lit, ok := strings.CutPrefix(cmd, "go:"); ok {
			if cmd, err = strconv.Unquote(lit); err != nil {
				t.Fatalf("%s line %d: unquote: %v", name, i+1, err)
			}
		}
		out = append(out, cmd)
	}
	return out
}

// fuzzSeedStrings returns the string values of a file in Go's fuzz corpus format.
func fuzzSeedStrings(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lit, ok := strings.CutPrefix(sc.Text(), "string(")
		if !ok {
			continue
		}
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if err != nil {
			t.Fatalf("%s: unquote: %v", name, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// goldenLine is a command's line in the golden: hashes of the command and of its verdicts
// in every golden context, plus the normalised form's, so that a line changes when any
// field of any verdict does.
func goldenLine(c *Classifier, cmd string) (string, []byte) {
	var verdicts []Verdict
	for _, cx := range goldenContexts() {
		verdicts = append(verdicts, c.ClassifyIn(cx, cmd))
	}
	js, err := json.Marshal(struct {
		Verdicts   []Verdict
		Normalised string
	}{verdicts, Normalise(cmd)})
	if err != nil {
		panic(err)
	}
	h, v := sha256.Sum256([]byte(cmd)), sha256.Sum256(js)
	return hex.EncodeToString(h[:6]) + " " + hex.EncodeToString(v[:8]), js
}

// TestVerdictsGolden checks that every command of the test data gets, in every golden
// context, exactly the verdict it got when testdata/verdicts.golden was written (from
// shellrisk at main 0d22c64, before the speed work of issue 20): a change that is meant to
// be only faster must not change one reason, segment or listed command. A change that
// means to change verdicts rewrites the golden with -update and says why in its commit.
func TestVerdictsGolden(t *testing.T) {
	t.Parallel()
	c, err := NewClassifier(RulesConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cmds := goldenCommands(t)
	if len(cmds) < 5000 {
		t.Fatalf("golden has %d commands, want the whole test data", len(cmds))
	}
	var got []string
	var verdicts [][]byte
	seen := map[string]bool{}
	for _, cmd := range cmds {
		if seen[cmd] {
			continue
		}
		seen[cmd] = true
		line, js := goldenLine(c, cmd)
		got = append(got, line)
		verdicts = append(verdicts, js)
	}
	const name = "testdata/verdicts.golden"
	if *updateGolden {
		if err := os.WriteFile(name, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("read golden (write it with -update): %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(want) != len(got) {
		t.Fatalf("golden has %d commands, the test data %d: rewrite it with -update", len(want), len(got))
	}
	failed := 0
	for i := range got {
		if got[i] != want[i] {
			failed++
			if failed <= 10 {
				t.Errorf("verdicts of command %d changed (%s, was %s):\n%s", i, got[i], want[i], verdicts[i])
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d commands changed verdicts", failed, len(got))
	}
}

// TestGoldenParses checks that the golden's inputs exercise the parser's whole range: text
// it refuses as well as text it reads.
func TestGoldenParses(t *testing.T) {
	t.Parallel()
	bad, good := 0, 0
	for _, cmd := range goldenCommands(t) {
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), ""); err != nil {
			bad++
		} else {
			good++
		}
	}
	if bad == 0 || good < 4000 {
		t.Fatalf("golden inputs: %d parse, %d do not", good, bad)
	}
}
