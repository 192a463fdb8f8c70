package backend

import (
	"path"
	"sort"
	"strings"
)

// secretMarkers are the name fragments that mark a variable as a secret. A match anywhere in
// the upper-cased name drops the variable: MY_API_TOKEN, AWS_SECRET_ACCESS_KEY, GIT_ASKPASS_AUTH.
var secretMarkers = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// DefaultPassthrough is the allowlist used when a configuration names none.
var DefaultPassthrough = []string{"PATH", "HOME", "USER", "LANG", "LC_*", "TERM", "TMPDIR", "SHELL"}

// IsSecretName reports whether a variable name looks like it holds a secret.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, m := range secretMarkers {
		if strings.Contains(up, m) {
			return true
		}
	}
	return false
}

// EnvPolicy decides which variables reach a command.
//
// Host variables pass only when their name matches Passthrough (exact names or path.Match
// globs such as "LC_*"); variables a request sets explicitly pass unless their name is a
// secret's. Secret-looking names never pass, whatever the allowlist says: a configuration that
// lists "GITHUB_TOKEN" still does not forward it.
//
// Every environment also carries [GitOverrides] (except the keys in GitAllow), and a value
// that carries credentials inside a URL is dropped like a secret's name.
type EnvPolicy struct {
	Passthrough []string
	// GitAllow names git configuration keys the user lets repositories set (e.g.
	// "core.pager"); the others are overridden.
	GitAllow []string
}

// Allows reports whether a host variable of this name may pass.
func (p EnvPolicy) Allows(name string) bool {
	if name == "" || IsSecretName(name) {
		return false
	}
	for _, pat := range p.Passthrough {
		if pat == name {
			return true
		}
		if ok, err := path.Match(pat, name); err == nil && ok {
			return true
		}
	}
	return false
}

// Build returns the environment for a command as sorted NAME=value pairs: the allowed part
// of host (in os.Environ form), then extra on top. Names in extra that look like secrets or
// are not valid variable names are dropped.
func (p EnvPolicy) Build(host []string, extra map[string]string) []string {
	vars := make(map[string]string, len(host)+len(extra))
	for _, kv := range host {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !p.Allows(name) || gitControlled(name) || HasURLCredentials(value) {
			continue
		}
		vars[name] = value
	}
	for name, value := range extra {
		if !ValidName(name) || IsSecretName(name) || gitControlled(name) || HasURLCredentials(value) {
			continue
		}
		vars[name] = value
	}
	for name, value := range gitEnv(p.GitAllow) {
		vars[name] = value
	}
	out := make([]string, 0, len(vars))
	for name, value := range vars {
		out = append(out, name+"="+value)
	}
	sort.Strings(out)
	return out
}

// MatchesEverything reports whether an env_passthrough pattern would let every variable
// through ("*", "?*", "**", "[!x]*"…): such an allowlist is no allowlist, and is refused.
func MatchesEverything(pattern string) bool {
	probes := []string{"A", "Z9", "_X", "PATH", "xq_unlikely_name_1", "a", "ZZ_TOP_42"}
	for _, p := range probes {
		if ok, err := path.Match(pattern, p); err != nil || !ok {
			return false
		}
	}
	return true
}

// ValidName reports whether name is a portable shell variable name.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
