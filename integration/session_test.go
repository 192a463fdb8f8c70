package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayedAgentSession replays what a coding agent does on a small Go module — read,
// search, build, test, edit, format, commit — through `airlock call` in the default
// configuration (manual, allow_write, local backend, kernel sandbox, no network) with nobody
// to answer: nothing the sandbox bounds may stop for a person, and reading the workspace's
// .env by name is still refused.
func TestReplayedAgentSession(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	dir := t.TempDir()
	// A library module: at its root sit .env and the configuration, which the sandbox keeps
	// unreadable, and it lists that directory only (see the report of issue 20: nothing new
	// can be created beside them), so the code lives in a package directory.
	files := map[string]string{
		"go.mod":              "module example.com/greet\n\ngo 1.22\n",
		"greet/greet.go":      "package greet\n\n// TODO: greet by name\nfunc Greet() string {   return \"hello\" }\n",
		"greet/greet_test.go": "package greet\n\nimport \"testing\"\n\nfunc TestGreet(t *testing.T) {\n\tif Greet() != \"hello\" {\n\t\tt.Fatal(Greet())\n\t}\n}\n",
		".env":                "API_TOKEN=marker-secret-0451\n",
		".gitignore":          ".env\nairlock.toml\n",
	}
	if err := os.Mkdir(filepath.Join(dir, "greet"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The repository exists before the session, as a project's does.
	git := exec.Command("git", "init", "-q", dir)
	if out, err := git.CombinedOutput(); err != nil {
		t.Skipf("git init: %v: %s", err, out)
	}
	// A fresh session compiles the standard library into its own GOCACHE: give it time.
	writeConfig(t, dir, "[approvals]\nmode = \"manual\"\n\n[environment]\ntimeout = 600\n")

	steps := []struct{ name, command string }{
		{"list", `ls -la`},
		{"read", `cat go.mod && sed -n '1,40p' greet/greet.go`},
		{"search recursive", `grep -rn TODO .`},
		{"search include", `grep -r 'func Greet' --include='*.go' .`},
		{"search files", `grep -rl Greet`},
		{"find", `find . -name '*.go'`},
		{"hexdump", `xxd -l 64 greet/greet.go`},
		{"build", `go build ./...`},
		{"test", `go test ./...`},
		{"vet", `go vet ./...`},
		{"edit", `sed -i 's/TODO: greet by name/Greet says hello./' greet/greet.go`},
		{"format check", `gofmt -l .`},
		{"format", `gofmt -w greet/greet.go`},
		{"test again", `go test -count=1 ./...`},
		{"status", `git status --short`},
		{"diff", `git diff --stat`},
		{"stage", `git add greet go.mod .gitignore`},
		{"commit", `git -c user.name=Agent -c user.email=agent@example.com commit -qm 'greet: say hello'`},
		{"log", `git log --oneline -1`},
	}
	// One batch is one session, in order: the steps share its temp dir and GOCACHE.
	var batch []string
	for _, s := range steps {
		batch = append(batch, `{"name":"terminal","arguments":{"command":`+jsonString(s.command)+`},"call_id":"`+strings.ReplaceAll(s.name, " ", "-")+`"}`)
	}
	rs := call(t, dir, "["+strings.Join(batch, ",")+"]")
	if len(rs) != len(steps) {
		t.Fatalf("%d results for %d calls", len(rs), len(steps))
	}
	for i, s := range steps {
		r := rs[i]
		if r.Status != "ok" {
			t.Errorf("%s: %q stopped: %s/%s %s (risk %s, decided by %s)", s.name, s.command, r.Status, r.ErrorCode, r.ErrorMessage, r.Receipt.Risk, r.Receipt.DecidedBy)
			continue
		}
		t.Logf("%s: %q ran unasked (risk %s, %s)", s.name, s.command, r.Receipt.Risk, r.Receipt.ReasonCode)
		code := -1
		if r.Metadata.ExitCode != nil {
			code = *r.Metadata.ExitCode
		}
		// grep says "Permission denied" (exit 2) for the files the sandbox hides.
		if code != 0 && !(strings.HasPrefix(s.command, "grep") && code == 2 && strings.Contains(r.Content, "Permission denied")) {
			t.Errorf("%s: %q ran but failed: exit %d\n%s", s.name, s.command, code, r.Content)
		}
		if strings.Contains(r.Content, "marker-secret-0451") {
			t.Errorf("%s: %q printed the .env secret", s.name, s.command)
		}
	}
	rs = call(t, dir, `{"name":"terminal","arguments":{"command":"cat .env"},"call_id":"read-secret"}`)
	if r := rs[0]; r.Status == "ok" || r.ErrorCode != "approval_required" || strings.Contains(r.Content, "marker-secret-0451") {
		t.Errorf("cat .env: %s/%s %q, want refused with approval_required", r.Status, r.ErrorCode, r.Content)
	}
	out, err := exec.Command("git", "-C", dir, "log", "--format=%s", "-1").Output()
	if err != nil || strings.TrimSpace(string(out)) != "greet: say hello" {
		t.Errorf("the session's commit is not there: %q %v", out, err)
	}
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
