package ssh

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend/helper"
)

// TestHelperScripts runs the scripts that install and start the helper under the local
// /bin/sh, with a fake HOME and a shell script standing in for the helper binary, and checks
// that only a file that passed every check is exec'd.
func TestHelperScripts(t *testing.T) {
	t.Parallel()
	good := []byte("#!/bin/sh\necho \"helper ran: $1\"\n")
	sum := sha256.Sum256(good)
	hexSum := hex.EncodeToString(sum[:])
	name := "helper-" + hexSum
	const other = 65534 // an account other than the one running the test (which is root)

	type env struct{ home, cache, helper, ran string }
	for _, tc := range []struct {
		name     string
		root     bool // needs root, to chown to another account
		setup    func(t *testing.T, e env)
		upload   []byte // run the upload script with this stdin first
		wantUp   string // its status
		wantRun  string // the start script's status
		wantMode os.FileMode
	}{
		{name: "no cache", wantRun: "stale is missing or not a regular file", wantMode: 0o700},
		{name: "upload then start", upload: good, wantUp: "ok", wantRun: "ok", wantMode: 0o700},
		{name: "upload of other bytes", upload: []byte("evil"), wantUp: "fail could not write and verify", wantRun: "stale", wantMode: 0o700},
		{
			name: "helper with another hash",
			setup: func(t *testing.T, e env) {
				mustWrite(t, e.helper, []byte("#!/bin/sh\ntouch "+e.ran+"\n"), 0o700)
			},
			wantRun: "stale has another sha256",
		},
		{
			name:    "writable helper",
			setup:   func(t *testing.T, e env) { mustWrite(t, e.helper, good, 0o777) },
			wantRun: "stale is not an executable owned by uid",
		},
		{
			name: "symlink to a good helper",
			setup: func(t *testing.T, e env) {
				target := filepath.Join(e.home, "elsewhere")
				mustWrite(t, target, good, 0o700)
				if err := os.Symlink(target, e.helper); err != nil {
					t.Fatal(err)
				}
			},
			wantRun: "stale is missing or not a regular file",
		},
		{
			name: "upload over a symlink",
			setup: func(t *testing.T, e env) {
				if err := os.Symlink(filepath.Join(e.home, "target"), e.helper); err != nil {
					t.Fatal(err)
				}
			},
			upload: good, wantUp: "ok", wantRun: "ok",
		},
		{
			name: "world-writable cache is tightened",
			setup: func(t *testing.T, e env) {
				if err := os.Chmod(e.cache, 0o777); err != nil {
					t.Fatal(err)
				}
				mustWrite(t, e.helper, good, 0o700)
			},
			wantRun: "ok", wantMode: 0o700,
		},
		{
			name: "cache a symlink to a good directory",
			setup: func(t *testing.T, e env) {
				real := filepath.Join(e.home, "real")
				if err := os.Mkdir(real, 0o700); err != nil {
					t.Fatal(err)
				}
				mustWrite(t, filepath.Join(real, name), good, 0o700)
				if err := os.Remove(e.cache); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(real, e.cache); err != nil {
					t.Fatal(err)
				}
			},
			upload: good, wantUp: "refuse", wantRun: "refuse nor a symlink",
		},
		{
			name: "group-writable home",
			setup: func(t *testing.T, e env) {
				if err := os.Chmod(e.home, 0o770); err != nil {
					t.Fatal(err)
				}
			},
			upload: good, wantUp: "refuse", wantRun: "refuse",
		},
		{
			name: "cache of another account",
			root: true,
			setup: func(t *testing.T, e env) {
				if err := os.Chown(e.cache, other, other); err != nil {
					t.Fatal(err)
				}
			},
			upload: good, wantUp: "refuse", wantRun: "refuse " + filepath.Join(".cache", "airlock") + " is not a directory",
		},
		{
			name: "helper of another account",
			root: true,
			setup: func(t *testing.T, e env) {
				mustWrite(t, e.helper, good, 0o755)
				if err := os.Chown(e.helper, other, other); err != nil {
					t.Fatal(err)
				}
			},
			wantRun: "stale is not an executable owned by uid",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			home := t.TempDir()
			e := env{home: home, cache: filepath.Join(home, ".cache", "airlock"), ran: filepath.Join(home, "ran")}
			e.helper = filepath.Join(e.cache, name)
			if tc.setup != nil {
				if err := os.MkdirAll(e.cache, 0o700); err != nil {
					t.Fatal(err)
				}
				tc.setup(t, e)
			}
			if tc.upload != nil {
				status, _ := runScript(t, home, uploadScript("nonce-up", name, hexSum), tc.upload)
				if !statusIs(status, tc.wantUp) {
					t.Errorf("upload: status %q, want %q", status, tc.wantUp)
				}
				if left, _ := filepath.Glob(filepath.Join(e.cache, ".helper-*")); len(left) > 0 {
					t.Errorf("upload left %q behind", left)
				}
			}
			status, after := runScript(t, home, helperScript("nonce-run", name, &helper.Binary{Files: []helper.File{{Name: "airlock", SHA256: hexSum}}}, ""), nil)
			if !statusIs(status, tc.wantRun) {
				t.Errorf("start: status %q, want %q", status, tc.wantRun)
			}
			if ranGood := after == "helper ran: helper\n"; ranGood != (status == "ok") {
				t.Errorf("start: status %q but output after it %q", status, after)
			}
			if _, err := os.Stat(e.ran); err == nil {
				t.Error("a helper with another hash ran")
			}
			if tc.wantMode != 0 {
				fi, err := os.Stat(e.cache)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != tc.wantMode {
					t.Errorf("cache mode %o, want %o", fi.Mode().Perm(), tc.wantMode)
				}
			}
		})
	}
}

// runScript runs script under /bin/sh with HOME set to home and returns the status on its
// "nonce-… " line and what it printed after that line.
func runScript(t *testing.T, home, script string, stdin []byte) (status, after string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"HOME=" + home, "PATH=" + remotePath}
	cmd.Stdin = strings.NewReader(string(stdin))
	out, _ := cmd.Output() // the exit code is not the contract; the status line is
	for _, nonce := range []string{"nonce-up", "nonce-run"} {
		if s, ok := statusLine(out, nonce); ok {
			_, rest, _ := strings.Cut(string(out), s+"\n")
			return s, rest
		}
	}
	t.Fatalf("no status line in %q", out)
	return "", ""
}

// statusIs reports whether status has want's first word and contains the rest.
func statusIs(status, want string) bool {
	w, rest, _ := strings.Cut(want, " ")
	word, _, _ := strings.Cut(status, " ")
	return word == w && strings.Contains(status, rest)
}

func mustWrite(t *testing.T, file string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(file, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, mode); err != nil {
		t.Fatal(err)
	}
}
