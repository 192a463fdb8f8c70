package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/backend/helper"
)

// The README installs airlock-helper beside airlock; airlock starts its local helper from it
// when it is of the same source, from itself when there is none, and from itself when the
// one beside it is of other source, saying why (doctor, the result's notes). The command's
// parent is the helper: its comm is the name of the file it was started from ("exe" for
// /proc/self/exe).
func TestHelperBinaryBeside(t *testing.T) {
	t.Parallel()
	helperOf := func(bin string) (string, string) {
		t.Helper()
		ws := t.TempDir()
		cmd := exec.Command(bin, "exec", "--", "cat /proc/$PPID/comm")
		cmd.Dir = ws
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s exec: %v\n%s", bin, err, errb.String())
		}
		doc := exec.Command(bin, "doctor")
		doc.Dir = ws
		report, _ := doc.CombinedOutput()
		return strings.TrimSpace(out.String()), string(report)
	}

	comm, report := helperOf(airlockBin)
	if comm != "airlock-helper" {
		t.Errorf("beside its airlock-helper, airlock's commands ran under %q, want airlock-helper", comm)
	}
	if want := "the helper runs from " + filepath.Join(filepath.Dir(airlockBin), "airlock-helper"); !strings.Contains(report, want) {
		t.Errorf("doctor does not say %q:\n%s", want, report)
	}

	data, err := os.ReadFile(airlockBin)
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), "airlock")
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	comm, report = helperOf(alone)
	if comm != "exe" {
		t.Errorf("with no airlock-helper beside it, commands ran under %q, want airlock itself (exe)", comm)
	}
	if strings.Contains(report, "airlock-helper") {
		t.Errorf("doctor speaks of an airlock-helper that is not there:\n%s", report)
	}

	// A helper of other source: its recorded fingerprint changed, as an older build's is.
	helper, err := os.ReadFile(filepath.Join(filepath.Dir(airlockBin), "airlock-helper"))
	if err != nil {
		t.Fatal(err)
	}
	loc := regexp.MustCompile(`airlock-helper-source/sha256:[0-9a-f]{64}`).FindIndex(helper)
	if loc == nil {
		t.Fatal("airlock-helper carries no source fingerprint")
	}
	at := loc[1] - 1
	if helper[at] == '1' {
		helper[at] = '0'
	} else {
		helper[at] = '1'
	}
	stale := filepath.Join(filepath.Dir(alone), "airlock-helper")
	if err := os.WriteFile(stale, helper, 0o755); err != nil {
		t.Fatal(err)
	}
	comm, report = helperOf(alone)
	if comm != "exe" {
		t.Errorf("beside an airlock-helper of other source, commands ran under %q, want airlock itself (exe)", comm)
	}
	if want := "the helper is airlock itself, not airlock-helper beside it: " + stale + " is built from other source"; !strings.Contains(report, want) {
		t.Errorf("doctor does not say %q:\n%s", want, report)
	}
}

// In Docker too, with no helper_binary configured, the helper copied into the container is
// airlock-helper beside airlock, and doctor says so.
func TestHelperBinaryBesideInDocker(t *testing.T) {
	t.Parallel()
	toml, _ := dockertest.Config(t, "sib", 20, airlockBin, "")
	toml = regexp.MustCompile(`(?m)^helper_binary = .*\n`).ReplaceAllString(toml, "")
	dir := t.TempDir()
	writeConfig(t, dir, toml)
	out, errOut, code := run(t, dir, "", nil, "exec", "--", "cat /proc/$PPID/cmdline | tr '\\0' ' '")
	if code != 0 {
		t.Fatalf("exec: %d\n%s\n%s", code, out, errOut)
	}
	// The helper is installed in the container under its digest and started as "… helper …";
	// its digest is the one of airlock-helper's bytes, not airlock's.
	helper, err := helper.Inspect(filepath.Join(filepath.Dir(airlockBin), "airlock-helper"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`/helper-([0-9a-f]{12,})`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(helper.Digest, m[1]) {
		t.Errorf("the command's parent is not the airlock-helper beside airlock (digest %.12s): %q", helper.Digest, out)
	}
	report, errOut, _ := run(t, dir, "", nil, "doctor")
	if want := "the helper runs from " + filepath.Join(filepath.Dir(airlockBin), "airlock-helper"); !strings.Contains(report+errOut, want) {
		t.Errorf("doctor does not say %q:\n%s%s", want, report, errOut)
	}
}
