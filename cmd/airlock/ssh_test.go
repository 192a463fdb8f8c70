package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

func TestSSHTrustAddsALineThatVerifies(t *testing.T) {
	srv := sshtest.Start(t)
	t.Chdir(t.TempDir()) // no airlock.toml around
	kh := filepath.Join(t.TempDir(), "known_hosts")
	port := strconv.Itoa(srv.Port)
	fp := gossh.FingerprintSHA256(srv.HostKey)

	trust := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"ssh", "trust"}, args...), stdio{in: strings.NewReader(""), out: &out, err: &errb})
		return code, out.String(), errb.String()
	}

	// Not a terminal and no --yes: shows the fingerprint, adds nothing.
	code, out, errOut := trust("--port", port, "--known-hosts", kh, srv.Host)
	if code == 0 || !strings.Contains(out, fp) || !strings.Contains(errOut, "--yes") {
		t.Fatalf("without --yes: code %d out %q err %q", code, out, errOut)
	}
	if _, err := os.Stat(kh); err == nil {
		t.Fatal("known_hosts written without confirmation")
	}

	code, out, errOut = trust("--port", port, "--known-hosts", kh, srv.Host, "--yes")
	if code != 0 || !strings.Contains(out, fp) {
		t.Fatalf("--yes: code %d out %q err %q", code, out, errOut)
	}
	if err := ssh.CheckKnownHost(kh, srv.Addr(), srv.HostKey); err != nil {
		t.Fatalf("added line does not verify: %v", err)
	}
	code, out, _ = trust("--port", port, "--known-hosts", kh, "--yes", srv.Host)
	if code != 0 || !strings.Contains(out, "already trusted") {
		t.Errorf("second trust: code %d out %q", code, out)
	}

	cfg := srv.Config
	cfg.KnownHosts = kh
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := ssh.New(ctx, cfg)
	if err != nil {
		t.Fatalf("connect with the trusted key: %v", err)
	}
	defer env.Close(ctx)
	res, err := env.Exec(ctx, backend.Request{Command: "echo trusted"})
	if err != nil || string(res.Stdout) != "trusted\n" {
		t.Fatalf("exec: %v %q", err, res.Stdout)
	}
}

func TestSSHTrustRefusesAChangedKey(t *testing.T) {
	srv := sshtest.Start(t)
	t.Chdir(t.TempDir())
	_, other := sshtest.NewKeyFile(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := ssh.AddKnownHost(kh, srv.Addr(), other.PublicKey()); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"ssh", "trust", "--yes", "--port", strconv.Itoa(srv.Port), "--known-hosts", kh, srv.Host},
		stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code == 0 || !strings.Contains(errb.String(), "CHANGED") {
		t.Fatalf("changed key: code %d out %q err %q", code, out.String(), errb.String())
	}
}
