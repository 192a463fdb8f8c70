package sshtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// accountPrefix starts the name of every account this package creates; the name goes on
// with the creating process's pid, so that an account left behind by a process that died
// can be told from one in use and removed.
const accountPrefix = "airlock-t-"

// accountLock serialises useradd and userdel between test processes: shadow's tools take
// /etc/passwd's lock without waiting and fail when another holds it.
const accountLock = "/run/airlock-sshtest-accounts.lock"

// account is one machine account with its home.
type account struct {
	name     string
	uid, gid int
	home     string
}

var sweepOnce sync.Once

// newAccount creates an account of its own for one server: no password (but not locked,
// which sshd would refuse without PAM), bash as its shell, a home with an empty profile.
// It is removed, with its home and every process it still runs, when the test ends.
func newAccount(t testing.TB) *account {
	t.Helper()
	sweepOnce.Do(sweepStaleAccounts)
	name := fmt.Sprintf("%s%d-%s", accountPrefix, os.Getpid(), randHex(3))
	home := filepath.Join("/home", name)
	a := &account{name: name, home: home}
	err := withAccountLock(func() error {
		return retry(func() error {
			out, err := exec.Command("useradd", "-M", "-d", home, "-s", "/bin/bash", "-p", "*", name).CombinedOutput()
			if _, lerr := user.Lookup(name); err != nil && lerr != nil {
				return fmt.Errorf("useradd %s: %w: %s", name, err, bytes.TrimSpace(out))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	t.Cleanup(func() {
		if err := removeAccount(name, home); err != nil {
			t.Errorf("sshtest: %v", err)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	a.uid, _ = strconv.Atoi(u.Uid)
	a.gid, _ = strconv.Atoi(u.Gid)

	must(t, os.Mkdir(home, 0o755))
	must(t, os.Chmod(home, 0o755))
	must(t, os.WriteFile(filepath.Join(home, ".profile"), nil, 0o644))
	// bash reads .bashrc for every command sshd hands it. It prints only for servers started
	// WithNoisyDotfiles, as many real ones do.
	must(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte(noisyBashrc), 0o644))
	for _, p := range []string{home, filepath.Join(home, ".profile"), filepath.Join(home, ".bashrc")} {
		must(t, os.Chown(p, a.uid, a.gid))
	}
	return a
}

// removeAccount kills what the account still runs, deletes it and its home.
func removeAccount(name, home string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("remove account %s: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	killUser(uid)
	err = withAccountLock(func() error {
		return retry(func() error {
			// -f: a zombie the account left, not yet reaped, must not keep it alive.
			out, err := exec.Command("userdel", "-f", name).CombinedOutput()
			if err != nil {
				return fmt.Errorf("userdel %s: %w: %s", name, err, bytes.TrimSpace(out))
			}
			return nil
		})
	})
	if rerr := os.RemoveAll(home); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// sweepStaleAccounts removes the accounts and homes of test processes that are gone (killed
// before their cleanup ran).
func sweepStaleAccounts() {
	if f, err := os.Open("/etc/passwd"); err == nil {
		var stale []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, _, _ := strings.Cut(sc.Text(), ":")
			if ownerGone(name) {
				stale = append(stale, name)
			}
		}
		_ = f.Close()
		for _, name := range stale {
			_ = removeAccount(name, filepath.Join("/home", name))
		}
	}
	if ents, err := os.ReadDir("/home"); err == nil {
		for _, e := range ents {
			if ownerGone(e.Name()) {
				_ = os.RemoveAll(filepath.Join("/home", e.Name()))
			}
		}
	}
}

// ownerGone says whether name is one of this package's account names whose creating process
// no longer runs.
func ownerGone(name string) bool {
	rest, ok := strings.CutPrefix(name, accountPrefix)
	if !ok {
		return false
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// killUser SIGKILLs every process running as uid until none is left (or 5 s have passed).
func killUser(uid int) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := processesOf(uid)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processesOf lists the live (not zombie) processes whose real uid is uid.
func processesOf(uid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	want := strconv.Itoa(uid)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var zombie, mine bool
		for _, line := range strings.Split(string(status), "\n") {
			switch {
			case strings.HasPrefix(line, "State:"):
				f := strings.Fields(line)
				zombie = len(f) > 1 && f[1] == "Z"
			case strings.HasPrefix(line, "Uid:"):
				f := strings.Fields(line)
				mine = len(f) > 1 && f[1] == want
			}
		}
		if mine && !zombie {
			out = append(out, pid)
		}
	}
	return out
}

func withAccountLock(fn func() error) error {
	f, err := os.OpenFile(accountLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("account lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("account lock: %w", err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn()
}

// retry runs fn up to five times with a growing pause: something other than a test
// process (a package install, say) may hold /etc/passwd's lock for a moment.
func retry(fn func() error) error {
	var err error
	for i := range 5 {
		if err = fn(); err == nil {
			return nil
		}
		time.Sleep(time.Duration(50*(i+1)) * time.Millisecond)
	}
	return err
}
