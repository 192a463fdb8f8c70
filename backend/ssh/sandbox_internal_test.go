package ssh

import "testing"

// TestSandboxArgsFromPolicyRoots: the helper's sandbox gets the policy's roots placed in the
// remote workspace — relative ones beneath it, absolute ones as they are — and the
// workspace only when [policy] names none.
func TestSandboxArgsFromPolicyRoots(t *testing.T) {
	t.Parallel()
	ws := "/home/u/ws"
	tests := []struct {
		name  string
		mode  string
		roots roots
		port  int
		want  string
	}{
		{"default roots", "", roots{}, 0, " --sandbox auto --sandbox-write '/home/u/ws' --sandbox-read '/home/u/ws'"},
		{"one write root", SandboxLandlock, roots{read: []string{"."}, write: []string{"work"}}, 0,
			" --sandbox landlock --sandbox-write '/home/u/ws/work' --sandbox-read '/home/u/ws'"},
		{"absolute and dotted roots", "", roots{read: []string{"/srv/data", "./docs"}, write: []string{"a/../b", "/tmp/out"}}, 0,
			" --sandbox auto --sandbox-write '/home/u/ws/b' --sandbox-write '/tmp/out' --sandbox-read '/srv/data' --sandbox-read '/home/u/ws/docs'"},
		{"proxy port", "", roots{write: []string{"work"}}, 4242,
			" --sandbox auto --sandbox-write '/home/u/ws/work' --sandbox-read '/home/u/ws' --sandbox-connect 4242"},
		{"off", SandboxOff, roots{write: []string{"work"}}, 4242, " --sandbox off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Config{Sandbox: tc.mode}.sandboxArgs(ws, tc.roots, tc.port)
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
