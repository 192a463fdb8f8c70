package ssh_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// otherUID owns what another account on the remote host plants (nobody).
const otherUID = 65534

// TestHelperCacheChecks sets up the remote helper cache the way another account with write
// access to it could leave it, and checks that the backend never runs what it did not
// upload itself: it repairs what the user owns, re-uploads a file it cannot vouch for, and
// falls back to session mode, saying why, where it cannot fix the cache.
func TestHelperCacheChecks(t *testing.T) {
	srv := sshtest.Start(t)
	bin := sshtest.AirlockBinary(t)
	cfg := srv.Config
	cfg.Mode = ssh.ModeAuto
	cfg.HelperBinary = bin
	uid, gid := srv.UID, srv.GID
	dotCache := filepath.Join(srv.Home, ".cache")
	cache := filepath.Join(dotCache, "airlock")
	cached := filepath.Join(cache, "helper-"+sha256File(t, bin))
	// A planted helper records that it ran, in a file its owner could write.
	ran := filepath.Join(srv.Home, "planted-helper-ran")
	planted := []byte("#!/bin/sh\necho ran > " + ran + "\n")

	// Each case starts from a fresh, well-made ~/.cache and no ~/.cache/airlock.
	reset := func(t *testing.T) {
		t.Helper()
		must(t, os.RemoveAll(cache))
		must(t, os.RemoveAll(ran))
		must(t, os.MkdirAll(dotCache, 0o700))
		must(t, os.Chmod(dotCache, 0o700))
		must(t, os.Chown(dotCache, uid, gid))
	}
	t.Cleanup(func() { reset(t) })
	mkdir := func(t *testing.T, dir string, mode fs.FileMode, owner int) {
		t.Helper()
		must(t, os.Mkdir(dir, 0o700))
		must(t, os.Chmod(dir, mode)) // beyond the umask
		must(t, os.Chown(dir, owner, owner))
	}
	plant := func(t *testing.T, file string, data []byte, owner int) {
		t.Helper()
		must(t, os.WriteFile(file, data, 0o755))
		must(t, os.Chmod(file, 0o755))
		must(t, os.Chown(file, owner, owner))
	}

	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
		// helper is whether the helper should start; refusal is a word of the note when not.
		helper  bool
		refusal string
		check   func(t *testing.T)
	}{
		{
			name:   "missing cache is created 0700",
			helper: true,
			check:  func(t *testing.T) { wantMode(t, cache, 0o700) },
		},
		{
			// The reviewer's scenario: a cache open to all, the helper swapped for a script.
			name: "world-writable cache with a planted helper",
			setup: func(t *testing.T) {
				mkdir(t, cache, 0o777, uid)
				plant(t, cached, planted, otherUID)
			},
			helper: true,
			check: func(t *testing.T) {
				wantMode(t, cache, 0o700)
				wantUploaded(t, cached, bin, uid)
			},
		},
		{
			name: "helper with another hash is replaced, not run",
			setup: func(t *testing.T) {
				mkdir(t, cache, 0o700, uid)
				plant(t, cached, planted, uid)
			},
			helper: true,
			check:  func(t *testing.T) { wantUploaded(t, cached, bin, uid) },
		},
		{
			name: "helper of another owner is replaced",
			setup: func(t *testing.T) {
				mkdir(t, cache, 0o700, uid)
				data, err := os.ReadFile(bin)
				must(t, err)
				plant(t, cached, data, otherUID)
			},
			helper: true,
			check:  func(t *testing.T) { wantUploaded(t, cached, bin, uid) },
		},
		{
			name: "symlink at the helper's name is replaced, its target left alone",
			setup: func(t *testing.T) {
				mkdir(t, cache, 0o700, uid)
				target := filepath.Join(t.TempDir(), "target")
				must(t, os.Symlink(target, cached))
				must(t, os.Lchown(cached, uid, gid))
				t.Cleanup(func() {
					if _, err := os.Lstat(target); err == nil {
						t.Errorf("the upload wrote through the symlink to %s", target)
					}
				})
			},
			helper: true,
			check:  func(t *testing.T) { wantUploaded(t, cached, bin, uid) },
		},
		{
			name: "cache of another owner",
			setup: func(t *testing.T) {
				mkdir(t, cache, 0o777, otherUID)
				plant(t, cached, planted, otherUID)
			},
			refusal: cache + " is not a directory",
		},
		{
			name:    "group-writable ~/.cache",
			setup:   func(t *testing.T) { must(t, os.Chmod(dotCache, 0o770)) },
			refusal: dotCache + " is not a directory owned by uid",
		},
		{
			name: "cache a symlink to a directory of another owner",
			setup: func(t *testing.T) {
				other := filepath.Join(srv.Home, "other-cache")
				mkdir(t, other, 0o755, otherUID)
				t.Cleanup(func() { _ = os.RemoveAll(other) })
				plant(t, filepath.Join(other, filepath.Base(cached)), planted, otherUID)
				must(t, os.Symlink(other, cache))
				must(t, os.Lchown(cache, uid, gid))
			},
			refusal: cache + " is not a directory",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset(t)
			if tc.setup != nil {
				tc.setup(t)
			}
			env := newEnv(t, cfg)
			d := env.Describe()
			switch {
			case tc.helper && d.Mode != ssh.ModeHelper:
				t.Fatalf("mode = %q (notes %q), want helper", d.Mode, d.Notes)
			case !tc.helper && (d.Mode != ssh.ModeSession || !hasString(d.Notes, tc.refusal)):
				t.Fatalf("mode = %q, notes %q: want session mode with a note containing %q", d.Mode, d.Notes, tc.refusal)
			}
			t.Logf("mode %s, notes %q", d.Mode, d.Notes)
			// Commands run either way; the first result says why it runs slower than asked.
			res := mustExec(t, env, backend.Request{Command: "echo hi"})
			if string(res.Stdout) != "hi\n" {
				t.Errorf("stdout %q", res.Stdout)
			}
			if !tc.helper && !hasString(res.Notes, tc.refusal) {
				t.Errorf("first result's notes %q do not say why the helper is not in use (%q)", res.Notes, tc.refusal)
			}
			if tc.helper && hasString(res.Notes, "not in use") {
				t.Errorf("notes %q speak of a fallback that did not happen", res.Notes)
			}
			if again := mustExec(t, env, backend.Request{Command: "true"}); hasString(again.Notes, "not in use") {
				t.Errorf("the fallback note is repeated on every result: %q", again.Notes)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("the planted helper ran")
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

func sha256File(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	must(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	must(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

func wantMode(t *testing.T, file string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(file)
	must(t, err)
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", file, got, want)
	}
}

// wantUploaded checks that file is a regular file of uid's, closed to others, holding bin.
func wantUploaded(t *testing.T, file, bin string, uid int) {
	t.Helper()
	fi, err := os.Lstat(file)
	must(t, err)
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("%s: mode %v, want a regular file closed to group and others", file, fi.Mode())
	}
	if owner := fileOwner(fi); owner != uid {
		t.Errorf("%s: owner %d, want %d", file, owner, uid)
	}
	if got, want := sha256File(t, file), sha256File(t, bin); got != want {
		t.Errorf("%s: sha256 %s, want %s", file, got, want)
	}
}

func hasString(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func fileOwner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// TestHelperFromDefaultBuild runs the helper from airlock as `go build ./cmd/airlock` makes
// it with a C compiler present — dynamically linked — shipped with its loader and libraries
// into the remote cache.
func TestHelperFromDefaultBuild(t *testing.T) {
	srv := sshtest.Start(t)
	cfg := srv.Config
	cfg.Mode = ssh.ModeAuto
	cfg.HelperBinary = helpertest.DefaultBuild(t)
	env := newEnv(t, cfg)
	d := env.Describe()
	if d.Mode != ssh.ModeHelper || !d.Capabilities.ResidentHelper {
		t.Fatalf("mode %q, notes %q", d.Mode, d.Notes)
	}
	if !strings.Contains(strings.Join(d.Notes, "\n"), "dynamically linked") {
		t.Errorf("notes do not say how the helper runs: %q", d.Notes)
	}
	res, err := env.Exec(context.Background(), backend.Request{Command: "env | grep -c '^LD_'; echo ok"})
	if err != nil || res.ExitCode != 1 && res.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(string(res.Stdout)), "0\nok") {
		t.Errorf("exec: %v %+v %q", err, res, res.Stdout)
	}
	// The loader and libraries sit beside the executable, in the checked cache.
	b, err := helper.Inspect(cfg.HelperBinary)
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(srv.Home, ".cache", "airlock", "helper-"+b.Digest+".d")
	for _, f := range b.Files[1:] {
		if fi, err := os.Lstat(filepath.Join(lib, f.Name)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v %v", f.Name, fi, err)
		}
	}
}
