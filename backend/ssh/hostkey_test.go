package ssh_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

func TestHostKeyRefused(t *testing.T) {
	srv := sshtest.Start(t)
	_, other := sshtest.NewKeyFile(t)
	want := gossh.FingerprintSHA256(srv.HostKey)
	tests := []struct {
		name    string
		known   string // known_hosts content; "-" for no file at all
		changed bool
	}{
		{"unknown host", "", false},
		{"missing file", "-", false},
		{"other host only", knownhosts.Line([]string{"192.0.2.1:22"}, srv.HostKey) + "\n", false},
		{"changed key", knownhosts.Line([]string{srv.Addr()}, other.PublicKey()) + "\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.Config
			cfg.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
			if tc.known != "-" {
				if err := os.WriteFile(cfg.KnownHosts, []byte(tc.known), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			env, err := ssh.New(ctx, cfg)
			if err == nil {
				_ = env.Close(ctx)
				t.Fatal("connected to a host whose key is not known")
			}
			var he *ssh.HostKeyError
			if !errors.As(err, &he) {
				t.Fatalf("err = %v (%T), want *HostKeyError", err, err)
			}
			if he.Changed != tc.changed || he.Fingerprint != want || he.KeyType != gossh.KeyAlgoED25519 {
				t.Errorf("HostKeyError = %+v, want changed=%v fingerprint %s", he, tc.changed, want)
			}
			msg := err.Error()
			for _, s := range []string{want, "airlock ssh trust --port", srv.Host} {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not mention %q", msg, s)
				}
			}
			if tc.changed && !strings.Contains(msg, "CHANGED") {
				t.Errorf("changed key not called out: %q", msg)
			}
			if errors.Is(err, backend.ErrUnavailable) {
				t.Errorf("a refused key must not look retryable: %v", err)
			}
		})
	}
}

func TestTrustedKeyVerifies(t *testing.T) {
	srv := sshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, err := ssh.ScanHostKey(ctx, srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if gossh.FingerprintSHA256(key) != gossh.FingerprintSHA256(srv.HostKey) {
		t.Fatalf("scanned %s, server has %s", gossh.FingerprintSHA256(key), gossh.FingerprintSHA256(srv.HostKey))
	}
	kh := filepath.Join(t.TempDir(), "sub", "known_hosts")
	if err := ssh.CheckKnownHost(kh, srv.Addr(), key); err == nil {
		t.Fatal("empty known_hosts accepted the key")
	}
	if err := ssh.AddKnownHost(kh, srv.Addr(), key); err != nil {
		t.Fatal(err)
	}
	if err := ssh.CheckKnownHost(kh, srv.Addr(), key); err != nil {
		t.Fatalf("added key does not verify: %v", err)
	}
	data, _ := os.ReadFile(kh)
	if !strings.HasPrefix(string(data), "|1|") || strings.Contains(string(data), srv.Host) {
		t.Errorf("line is not hashed: %q", data)
	}
	cfg := srv.Config
	cfg.KnownHosts = kh
	env := newEnv(t, cfg)
	if out := strings.TrimSpace(string(mustExec(t, env, backend.Request{Command: "echo ok"}).Stdout)); out != "ok" {
		t.Errorf("exec over the trusted key: %q", out)
	}
}

func TestAuthFailures(t *testing.T) {
	srv := sshtest.Start(t)
	wrongKey, _ := sshtest.NewKeyFile(t)
	tests := []struct {
		name string
		edit func(*ssh.Config)
	}{
		{"wrong key", func(c *ssh.Config) { c.KeyPath = wrongKey }},
		{"wrong user", func(c *ssh.Config) { c.User = "root" }},
		{"no such user", func(c *ssh.Config) { c.User = "airlock-nobody" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.Config
			tc.edit(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			env, err := ssh.New(ctx, cfg)
			if err == nil {
				_ = env.Close(ctx)
				t.Fatal("logged in")
			}
			if !errors.Is(err, ssh.ErrAuth) || errors.Is(err, backend.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrAuth and not ErrUnavailable", err)
			}
			if !strings.Contains(err.Error(), cfg.User+"@") || !strings.Contains(err.Error(), cfg.KeyPath) {
				t.Errorf("error does not name the user and key: %v", err)
			}
		})
	}
}

func TestUnreachableIsUnavailable(t *testing.T) {
	srv := sshtest.Start(t)
	cfg := srv.Config
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := ssh.New(ctx, cfg)
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func mustExec(t *testing.T, env backend.Environment, req backend.Request) backend.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := env.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Command, err)
	}
	return res
}

// combineKnownHosts writes one known_hosts with the keys of every server given.
func combineKnownHosts(t *testing.T, srvs ...*sshtest.Server) string {
	t.Helper()
	var b strings.Builder
	for _, s := range srvs {
		b.WriteString(knownhosts.Line([]string{s.Addr()}, s.HostKey) + "\n")
	}
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// authorize lets the key at keyPath log in to srv too.
func authorize(t *testing.T, srv *sshtest.Server, keyPath string) {
	t.Helper()
	pem, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(srv.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(gossh.MarshalAuthorizedKey(signer.PublicKey())); err != nil {
		t.Fatal(err)
	}
}
