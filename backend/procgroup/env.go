package procgroup

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
)

// environ returns env as a command gets it, the way os/exec gives it: each name once, the
// last value given for it winning, and an error for a NUL byte. A resident helper starts
// command after command with the same environment, and building the map that finds
// duplicates cost every start 9 µs and, as garbage, a page fault's worth of new memory: the
// result for the environment seen last is kept, and an equal one (compared by content, so
// that a caller may reuse its slice) gets it again.
func environ(env []string) ([]string, error) {
	if env == nil {
		return []string{}, nil
	}
	if m := lastEnv.Load(); m != nil && slices.Equal(m.in, env) {
		return m.out, nil
	}
	out, err := dedupEnv(env)
	if err != nil {
		return nil, err
	}
	lastEnv.Store(&envMemo{in: slices.Clone(env), out: out})
	return out, nil
}

// envMemo is environ's last environment and what it made of it; neither is ever written to.
type envMemo struct{ in, out []string }

var lastEnv atomic.Pointer[envMemo]

// dedupEnv is os/exec's check of a command's environment: the last of the variables that
// share a name is kept, in the order of the ones kept; an entry without "=" is kept as it
// is, an empty one dropped; a NUL anywhere is an error.
func dedupEnv(env []string) ([]string, error) {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("environment variable contains NUL")
		}
		eq := strings.IndexByte(kv, '=')
		if eq == 0 { // a name that starts with "=", as Windows has
			eq = strings.IndexByte(kv[1:], '=') + 1
		}
		if eq < 0 {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		if seen[kv[:eq]] {
			continue
		}
		seen[kv[:eq]] = true
		out = append(out, kv)
	}
	slices.Reverse(out)
	return slices.Clip(out), nil
}
