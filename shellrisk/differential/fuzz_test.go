package differential

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/shellrisk"
)

// FuzzDifferential is the long pass: it checks the same property as TestDifferential on
// commands the fuzzer makes from the seeds and the corpus, through its own byte mutations
// and, when family is odd, one of the mutators (comment and quoting boundaries, control
// characters, continuations, aliases, here-docs, expansions) on top. Run it with
//
//	go test ./shellrisk/differential/ -run '^$' -fuzz FuzzDifferential -fuzztime 30m
//
// -args -diff.shells=bash,bash-sh narrows the check to some shells, to look past a family
// that is known to fail in the others. Each fuzz worker process starts its own container. A failing input is saved under
// testdata/fuzz/FuzzDifferential and from then on runs in every `go test`, failing until
// the classifier is fixed; that is intended.
func FuzzDifferential(f *testing.F) {
	fuzzing := flag.Lookup("test.fuzz").Value.String() != ""
	saved, _ := os.ReadDir(filepath.Join("testdata", "fuzz", "FuzzDifferential"))
	if !fuzzing && len(saved) == 0 {
		f.Skip("no saved fuzz inputs; run with -fuzz FuzzDifferential for the long pass")
	}
	if fuzzing {
		// The whole corpus and every seed: what TestDifferential checks plain, the fuzzer
		// starts from.
		for i, in := range append(loadLines(f, filepath.Join("testdata", "seeds.txt"), false),
			loadLines(f, filepath.Join("..", "testdata", "corpus.tsv"), true)...) {
			f.Add(in.Cmd, uint8(i), uint64(i))
		}
	}
	s := startSandbox(f, 1)
	f.Fuzz(func(t *testing.T, cmd string, family uint8, seed uint64) {
		if family%2 == 1 {
			m := mutators[int(family/2)%len(mutators)]
			cmd = m.fn(cmd, rand.New(rand.NewPCG(seed, 0x5eed)))
		}
		if len(cmd) > 4096 {
			return
		}
		res, err := s.Run([][]byte{[]byte(cmd)})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		for _, r := range res[0] {
			if r.Error != "" {
				t.Fatalf("driver under %s: %s", r.Shell, r.Error)
			}
		}
		for _, fd := range compare(cmd, shellrisk.Classify(cmd), onlyShells(res[0])).Findings {
			t.Errorf("unjudged program\n%s", fd)
		}
	})
}

var flagShells = flag.String("diff.shells", "", "FuzzDifferential checks only these shells (comma-separated; default all)")

// onlyShells keeps the results of the shells -diff.shells names.
func onlyShells(rs []result) []result {
	if *flagShells == "" {
		return rs
	}
	want := strings.Split(*flagShells, ",")
	return slices.DeleteFunc(slices.Clone(rs), func(r result) bool { return !slices.Contains(want, r.Shell) })
}
