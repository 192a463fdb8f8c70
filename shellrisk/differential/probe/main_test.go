package main

import (
	"bytes"
	"testing"
)

// TestNotFound reads each shell's "not found" diagnostics, and nothing else.
func TestNotFound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		shell, stderr string
		want          []string
	}{
		{"bash", "bash: line 1: nosuch: command not found\nbash: line 2: /no/dir/f: No such file or directory\n", []string{"nosuch"}},
		{"bash", "bash: line 1: exec: nosuch: not found\n", []string{"nosuch"}},
		{"bash-sh", "sh: line 3: a b: command not found\n", []string{"a b"}},
		{"dash", "dash: 1: nosuch: not found\ndash: 1: cannot create /no/f: Directory nonexistent\n", []string{"nosuch"}},
		{"dash", "dash: 12: exec: /x/y: not found\n", []string{"/x/y"}},
		{"busybox", "sh: nosuch: not found\nsh: can't create /no/f: nonexistent directory\n", []string{"nosuch"}},
		{"busybox", "sh: exec: line 0: nosuch: not found\n", []string{"nosuch"}},
		{"busybox", "sh: line 1: x: not found\n", []string{"x"}},
		// The name eval looked up, not "eval: NAME".
		{"dash", "dash: 2: eval: -rf: not found\n", []string{"-rf"}},
		{"dash", "dash: 1: eval: eval: a[x]=1: not found\n", []string{"a[x]=1"}},
		{"busybox", "sh: eval: line 1: -rf: not found\n", []string{"-rf"}},
		{"busybox", "sh: eval: line 0: rm\f-rf: not found\n", []string{"rm\f-rf"}},
		{"dash", "dash: 1: hash: nosuch: not found\n", []string{"nosuch"}},
		{"dash", "hello\n", nil},
	} {
		got := notFound(tc.shell, []byte(tc.stderr))
		if len(got) != len(tc.want) {
			t.Errorf("notFound(%s, %q) = %q, want %q", tc.shell, tc.stderr, got, tc.want)
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], []byte(tc.want[i])) {
				t.Errorf("notFound(%s, %q)[%d] = %q, want %q", tc.shell, tc.stderr, i, got[i], tc.want[i])
			}
		}
	}
}
