package backend

import (
	"slices"
	"testing"
)

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
			got := tc.pol.Build(host, tc.extra)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
