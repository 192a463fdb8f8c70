package getopt

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/shellrisk"
)

// The spelling check: a program does the same whichever spelling of its options it gets,
// so the classifier must judge them alike: no spelling of a seed may get a lower risk
// than the seed as written, spelled all long, or spelled all short. The seeds are the
// differential harness's effect seeds (../testdata/effects_seeds.txt and the output-option
// seeds of the tables); a spelling counts only when the model reads it back as the same
// options, values and operands.

// spellingSeed is one command the model can read: its program words, its table, what the
// model read, and the risk every spelling must reach.
type spellingSeed struct {
	in     Seed
	prefix []string
	tb     *Table
	parsed Args
	ref    shellrisk.Risk
	refCmd string
}

// spellingSeeds are the effect seeds (hand-written and from the tables) the model reads
// whole, with their reference risk.
func spellingSeeds(t testing.TB) []spellingSeed {
	t.Helper()
	opts, err := Load(filepath.Join("..", "testdata", "options.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]*Table{}
	for prog, o := range opts {
		tables[prog] = NewTable(prog, o)
	}
	var out []spellingSeed
	for _, in := range append(readSeeds(t, filepath.Join("..", "testdata", "effects_seeds.txt")), OutputSeeds(opts)...) {
		words := strings.Fields(in.Cmd)
		if len(words) == 0 || strings.Join(words, " ") != in.Cmd || !allPlain(words) {
			continue
		}
		prefix := words[:1]
		prog := strings.TrimPrefix(words[0], "/usr/bin/")
		if prog == "git" && len(words) > 1 {
			prefix, prog = words[:2], "git "+words[1]
		}
		tb, ok := tables[prog]
		if !ok {
			continue
		}
		p, ok := tb.Parse(words[len(prefix):])
		if !ok || len(p.opts) == 0 {
			continue
		}
		s := spellingSeed{in: in, prefix: prefix, tb: tb, parsed: p, ref: shellrisk.Classify(in.Cmd).Risk, refCmd: in.Cmd}
		for _, st := range []Style{StyleLong, StyleShort} {
			if argv := tb.Respell(p, st, nil); argv != nil {
				cmd := strings.Join(append(append([]string(nil), prefix...), argv...), " ")
				if risk := shellrisk.Classify(cmd).Risk; risk > s.ref {
					s.ref, s.refCmd = risk, cmd
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func allPlain(words []string) bool {
	for _, w := range words {
		if !PlainWord.MatchString(w) {
			return false
		}
	}
	return true
}

// check checks one spelling of a seed; the message is empty when it passes or
// when the model reads the spelling as something else.
func (s spellingSeed) check(argv []string) string {
	if argv == nil {
		return ""
	}
	if back, ok := s.tb.Parse(argv); !ok || back.Key() != s.parsed.Key() {
		return ""
	}
	cmd := strings.Join(append(append([]string(nil), s.prefix...), argv...), " ")
	if v := shellrisk.Classify(cmd); v.Risk < s.ref {
		return fmt.Sprintf("%s is %s %v, but %s is %s", strconv.Quote(cmd), v.Risk, v.Codes(), strconv.Quote(s.refCmd), s.ref)
	}
	return ""
}

// spellingKey is a seed's entry in known_misreads.txt.
func spellingKey(cmd string) string { return spellingPrefix + cmd }

const spellingPrefix = "spelling: "

// TestOptionSpellings checks each seed the model reads in both plain styles and in
// spellingsPerSeed random ones (seeded by the command, so the same every run). Seeds in
// known_misreads.txt (as "spelling: COMMAND") must still misread.
func TestOptionSpellings(t *testing.T) {
	t.Parallel()
	const spellingsPerSeed = 24
	known := knownMisreads(t)
	seeds := spellingSeeds(t)
	var misread []string
	checked := 0
	for _, s := range seeds {
		h := fnv.New64a()
		h.Write([]byte(s.in.Cmd))
		r := rand.New(rand.NewPCG(h.Sum64(), 0x5eed))
		var msgs []string
		for i := range spellingsPerSeed + 2 {
			style := StyleRandom
			if i < 2 {
				style = Style(i)
			}
			checked++
			if m := s.check(s.tb.Respell(s.parsed, style, r)); m != "" && !containsString(msgs, m) {
				msgs = append(msgs, m)
			}
		}
		key := spellingKey(s.in.Cmd)
		switch {
		case len(msgs) > 0 && known[key]:
			misread = append(misread, key)
		case len(msgs) > 0:
			misread = append(misread, key)
			t.Errorf("%s: a spelling of the same options is judged lower:\n  %s", s.in.From, strings.Join(msgs, "\n  "))
		case known[key]:
			t.Errorf("%s: %q is in testdata/known_misreads.txt but no longer misreads: take it out", s.in.From, key)
		}
		delete(known, key)
	}
	for key := range known {
		t.Errorf("testdata/known_misreads.txt: %q is not a seed the model reads: take it out", key)
	}
	t.Logf("%d seeds read by the model, %d spellings checked, %d seeds with a spelling judged lower", len(seeds), checked, len(misread))
	if t.Failed() {
		t.Logf("misread now (the known_misreads.txt format):\n%s", strings.Join(misread, "\n"))
	}
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzOptionSpellings is the long pass of TestOptionSpellings: random spellings of random
// seeds, checked against the model and the classifier only (no process). Seeds known to
// misread are passed over. CI runs a bounded count (.ci/test).
func FuzzOptionSpellings(f *testing.F) {
	seeds := spellingSeeds(f)
	known := knownMisreads(f)
	var live []spellingSeed
	for _, s := range seeds {
		if !known[spellingKey(s.in.Cmd)] {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		f.Skip("no seed the model reads")
	}
	for i := range live {
		f.Add(uint16(i), uint64(i))
	}
	f.Fuzz(func(t *testing.T, which uint16, seed uint64) {
		s := live[int(which)%len(live)]
		argv := s.tb.Respell(s.parsed, StyleRandom, rand.New(rand.NewPCG(seed, 0x5eed)))
		if m := s.check(argv); m != "" {
			t.Errorf("%s: a spelling of the same options is judged lower:\n  %s", s.in.From, m)
		}
	})
}

// readSeeds reads a file in the differential harness's seeds format: one command a line,
// "#" comment lines, "go:" before a Go string literal.
func readSeeds(t testing.TB, file string) []Seed {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Seed
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if lit, ok := strings.CutPrefix(line, "go:"); ok {
			if line, err = strconv.Unquote(lit); err != nil {
				t.Fatalf("%s:%d: %v", file, n, err)
			}
		}
		out = append(out, Seed{From: fmt.Sprintf("%s:%d", filepath.Base(file), n), Cmd: line})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// knownMisreads are the "spelling: COMMAND" entries of the harness's
// testdata/known_misreads.txt.
func knownMisreads(t testing.TB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, s := range readSeeds(t, filepath.Join("..", "testdata", "known_misreads.txt")) {
		if strings.HasPrefix(s.Cmd, spellingPrefix) {
			out[s.Cmd] = true
		}
	}
	return out
}
