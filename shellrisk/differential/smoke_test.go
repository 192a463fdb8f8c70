package differential

import "testing"

func classifierPrograms() []string { return nil }

func TestSmoke(t *testing.T) {
	s := startSandbox(t, 2)
	res, err := s.Run([][]byte{[]byte("rm -rf /; echo hi | cat; /bin/ls -l & nosuch x; alias ll='ls -l'\nll"), []byte("x\x00; rm y")})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range res {
		for _, r := range rs {
			t.Logf("%s exit=%d runs=%d", r.Shell, r.Exit, len(r.Runs))
			for _, e := range r.Runs {
				t.Logf("   %q", e.Argv)
			}
			t.Logf("   missing %q stderr %q err %q", r.Missing, r.Stderr, r.Error)
		}
	}
}
