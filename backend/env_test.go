package backend

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// withoutGit drops the git override variables every environment carries.
func withoutGit(env []string) []string {
	out := []string{}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_CONFIG_") && !strings.HasPrefix(kv, "GIT_ATTR_SOURCE=") && !strings.HasPrefix(kv, "GIT_PAGER=") {
			out = append(out, kv)
		}
	}
	return out
}

func TestGitOverridesCannotBeUndone(t *testing.T) {
	t.Parallel()
	host := []string{"GIT_CONFIG_COUNT=0", "GIT_CONFIG_PARAMETERS='core.fsmonitor=/x'", "PATH=/bin"}
	extra := map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "/evil", "GIT_ATTR_SOURCE": "HEAD"}
	env := EnvPolicy{Passthrough: []string{"*ATH", "GIT_*"}, GitAllow: []string{"core.PAGER"}}.Build(host, extra)
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	if vars["GIT_CONFIG_PARAMETERS"] != "" || vars["GIT_ATTR_SOURCE"] != emptyTree {
		t.Fatalf("host or request git config passed: %q", env)
	}
	keys := map[string]string{}
	for i := 0; i < len(GitOverrides); i++ {
		if k, ok := vars["GIT_CONFIG_KEY_"+itoa(i)]; ok {
			keys[k] = vars["GIT_CONFIG_VALUE_"+itoa(i)]
		}
	}
	if keys["core.fsmonitor"] != "false" || keys["core.hooksPath"] != "/dev/null" {
		t.Fatalf("overrides: %v", keys)
	}
	if _, ok := keys["core.pager"]; ok {
		t.Fatalf("an allowed key was overridden: %v", keys)
	}
	if _, ok := vars["GIT_PAGER"]; ok {
		t.Fatalf("core.pager is allowed, yet GIT_PAGER is forced: %q", env)
	}
	if vars := (EnvPolicy{}).Build([]string{"GIT_PAGER=/evil"}, map[string]string{"GIT_PAGER": "/evil"}); !slices.Contains(vars, "GIT_PAGER=cat") {
		t.Fatalf("GIT_PAGER from the host or a request survived: %q", vars)
	}
	if vars["GIT_CONFIG_COUNT"] != itoa(len(GitOverrides)-1) {
		t.Fatalf("count %q for %d keys", vars["GIT_CONFIG_COUNT"], len(keys))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestCredentialValuesDropped(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"https://user:hunter2@example.com/repo.git":               true,
		"postgres://app:s3cret@db:5432/app":                       true,
		"https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/x": true,
		"https://example.com/path":                                false,
		"ssh://git@github.com/x":                                  false,
		"user@example.com":                                        false,
		"/usr/bin:/bin":                                           false,
	} {
		if got := HasURLCredentials(v); got != want {
			t.Errorf("HasURLCredentials(%q) = %v", v, got)
		}
	}
	env := withoutGit(EnvPolicy{Passthrough: []string{"DATABASE_URL", "PATH"}}.Build(
		[]string{"DATABASE_URL=postgres://app:s3cret@db/app", "PATH=/bin"}, map[string]string{"PROXY": "http://u:p@proxy:3128"}))
	if !slices.Equal(env, []string{"PATH=/bin"}) {
		t.Fatalf("credential URL passed: %q", env)
	}
}

func TestMatchesEverything(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{"*": true, "?*": true, "**": true, "*?": true, "[A-Za-z_]*": true, "LC_*": false, "PATH": false, "*_URL": false} {
		if got := MatchesEverything(p); got != want {
			t.Errorf("MatchesEverything(%q) = %v", p, got)
		}
	}
}

func TestIsSecretName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"MY_API_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "api_key": true, "DB_PASSWORD": true,
		"MYSQL_PASSWD": true, "GH_AUTH": true, "OAUTH_URL": true, "SERVICE_CREDENTIALS": true,
		"KEYBOARD": true, // a false positive by design: the rule is on the name, not a guess
		"PATH":     false, "HOME": false, "LANG": false, "LC_ALL": false, "TERM": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestEnvPolicyBuild(t *testing.T) {
	t.Parallel()
	host := []string{
		"PATH=/usr/bin", "HOME=/root", "LC_ALL=C.UTF-8", "LANG=C", "EDITOR=vim",
		"MY_API_TOKEN=x", "GITHUB_TOKEN=y", "malformed", "=novalue",
	}
	tests := []struct {
		name  string
		pol   EnvPolicy
		extra map[string]string
		want  []string
	}{
		{"defaults", EnvPolicy{Passthrough: DefaultPassthrough}, nil,
			[]string{"HOME=/root", "LANG=C", "LC_ALL=C.UTF-8", "PATH=/usr/bin"}},
		{"allowlist cannot pass a secret", EnvPolicy{Passthrough: []string{"GITHUB_TOKEN", "*"}}, nil,
			[]string{"EDITOR=vim", "HOME=/root", "LANG=C", "LC_ALL=C.UTF-8", "PATH=/usr/bin"}},
		{"nothing", EnvPolicy{}, nil, []string{}},
		{"extra overrides and is filtered", EnvPolicy{Passthrough: []string{"PATH"}},
			map[string]string{"PATH": "/bin", "X": "1", "NPM_TOKEN": "s", "bad name": "v", "1X": "v"},
			[]string{"PATH=/bin", "X=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := withoutGit(tc.pol.Build(host, tc.extra))
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
