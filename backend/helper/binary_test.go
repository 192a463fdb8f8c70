package helper_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

func TestInspectDefaultBuild(t *testing.T) {
	bin := helpertest.DefaultBuild(t)
	b, err := helper.Inspect(bin)
	if err != nil {
		t.Fatal(err)
	}
	if b.Static() || b.Interp == "" || len(b.Files) < 3 || b.Files[0].Name != "airlock" {
		t.Fatalf("a dynamic build inspected as %+v", b)
	}
	names := map[string]bool{}
	for _, f := range b.Files {
		names[f.Name] = true
		if len(f.SHA256) != 64 || f.Size == 0 {
			t.Errorf("file %+v", f)
		}
	}
	if !names[b.Interp] || !names["libc.so.6"] {
		t.Errorf("files %v: want the interpreter %s and libc.so.6", names, b.Interp)
	}
	if b.Digest == b.Files[0].SHA256 || !strings.Contains(b.LinkNote(), "libc.so.6") {
		t.Errorf("digest %s, note %q", b.Digest, b.LinkNote())
	}
	if err := b.CheckUname("Linux x86_64"); err != nil && b.Machine.String() == "EM_X86_64" {
		t.Error(err)
	}
	if err := b.CheckUname("Darwin x86_64"); err == nil {
		t.Error("a Darwin host accepted")
	}
	if err := b.CheckGOARCH("s390x"); err == nil && b.Machine.String() != "EM_S390" {
		t.Error("another architecture accepted")
	}

	// Installed as the backends install it — each file under its name, the executable
	// apart — the bundle starts with the loader given on the command line.
	dir := t.TempDir()
	lib := filepath.Join(dir, "helper.d")
	if err := os.Mkdir(lib, 0o700); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "helper")
	for i, f := range b.Files {
		dst := filepath.Join(lib, f.Name)
		if i == 0 {
			dst = exe
		}
		buildtest.CopyFile(t, f.Path, dst, 0o700)
	}
	argv := b.Argv(exe, lib, "version")
	if argv[0] != filepath.Join(lib, b.Interp) || argv[1] != "--library-path" || argv[3] != exe {
		t.Fatalf("argv %q", argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{} // nothing from the host's environment steers the loader
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "airlock ") {
		t.Fatalf("%q: %v\n%s", argv, err, out)
	}
}

func TestInspectStatic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "airlock")
	cmd := exec.Command("go", "build", "-o", p, "github.com/airlock-dev/airlock/cmd/airlock")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	b, err := helper.Inspect(p)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Static() || len(b.Files) != 1 || b.Digest != b.Files[0].SHA256 || b.LinkNote() != "" {
		t.Errorf("static build inspected as %+v", b)
	}
	if argv := b.Argv("/x/helper", "/x/helper.d", "helper"); strings.Join(argv, " ") != "/x/helper helper" {
		t.Errorf("argv %q", argv)
	}
	if _, err := helper.Inspect(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing binary inspected")
	}
	if err := os.WriteFile(filepath.Join(dir, "script"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := helper.Inspect(filepath.Join(dir, "script")); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("a script inspected: %v", err)
	}
}

func TestMergeEnv(t *testing.T) {
	t.Parallel()
	got := helper.MergeEnv([]string{"A=1", "B=2", "A=3"}, []string{"C=4", "B=5"})
	if strings.Join(got, " ") != "A=3 B=5 C=4" {
		t.Errorf("merged %q", got)
	}
}
