package pathpolicy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

// countingResolver answers each path with a resolution of its own (the path and the count
// of paths asked so far) and records what it was asked.
type countingResolver struct {
	backend.Environment
	asked [][]string
}

func (c *countingResolver) ResolvePaths(_ context.Context, paths []string) ([]backend.ResolvedPath, error) {
	c.asked = append(c.asked, slices.Clone(paths))
	out := make([]backend.ResolvedPath, len(paths))
	for i, p := range paths {
		out[i] = backend.ResolvedPath{Real: fmt.Sprintf("%s/%d", p, i), Exists: true, Links: i}
	}
	return out, nil
}

// TestResolveAsksEachPathOnce: a path named twice in one resolve (the workspace, then a root
// that is the workspace) is asked for once, and both places get that one answer.
func TestResolveAsksEachPathOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		paths []string
		asked []string
	}{
		{[]string{"/ws", "/ws", "/ws", "/ws/r.jsonl", "/ws/a"}, []string{"/ws", "/ws/r.jsonl", "/ws/a"}},
		{[]string{"/a", "/b", "/a", "/b"}, []string{"/a", "/b"}},
		{[]string{"/a", "/b"}, []string{"/a", "/b"}},
		{manyPaths(40), manyPaths(20)},
	} {
		env := &countingResolver{}
		rs, err := resolve(context.Background(), env, tc.paths)
		if err != nil {
			t.Fatal(err)
		}
		if len(env.asked) != 1 || !slices.Equal(env.asked[0], tc.asked) {
			t.Fatalf("resolve(%q) asked %q, want one message with %q", tc.paths, env.asked, tc.asked)
		}
		for i, p := range tc.paths {
			j := slices.Index(tc.asked, p)
			if want := fmt.Sprintf("%s/%d", p, j); rs[i].Real != want || rs[i].Links != j {
				t.Errorf("resolve(%q)[%d] = %+v, want the answer for %s (%s)", tc.paths, i, rs[i], p, want)
			}
		}
	}
}

// manyPaths is n paths naming n/2 places twice each when n is even and over 20 (the map
// side of distinct), else n places.
func manyPaths(n int) []string {
	var out []string
	for i := range n {
		if n > 20 {
			i %= n / 2
		}
		out = append(out, fmt.Sprintf("/p%d", i))
	}
	return out
}
