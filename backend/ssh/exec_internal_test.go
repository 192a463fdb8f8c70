package ssh

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

func TestQuoteRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "it's", `'`, `''`, `$(echo no) ; "dq" * \ back`, "new\nline", "tab\there", "!bang"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+quote(s)).Output()
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("quote(%q) came back as %q", s, out)
		}
	}
}

func FuzzQuote(f *testing.F) {
	f.Add("it's a 'test'")
	f.Fuzz(func(t *testing.T, s string) {
		q := quote(s)
		// Inside single quotes nothing is special; the only way out is the '\'' sequence.
		inner := strings.ReplaceAll(q[1:len(q)-1], `'\''`, "")
		if !strings.HasPrefix(q, "'") || !strings.HasSuffix(q, "'") || strings.Contains(inner, "'") {
			t.Fatalf("quote(%q) = %q escapes its quotes", s, q)
		}
	})
}

// FuzzMarkerWriter checks that however a stream is split into writes, exactly what follows
// the marker line is passed on and the status line is parsed.
func FuzzMarkerWriter(f *testing.F) {
	f.Add([]byte("noise"), []byte("payload\nmore"), uint8(3))
	f.Add([]byte(""), []byte(""), uint8(1))
	f.Fuzz(func(t *testing.T, noise, payload []byte, step uint8) {
		const nonce = "airlock-0123456789abcdef0123456789abcdef"
		if step == 0 || bytes.Contains(noise, []byte(nonce)) {
			return
		}
		stream := append(append(append([]byte{}, noise...), nonce+" pgid 42\n"...), payload...)
		var got bytes.Buffer
		m := &markerWriter{nonce: []byte(nonce), w: &got, lines: make(chan string, 1)}
		for i := 0; i < len(stream); i += int(step) {
			chunk := stream[i:min(len(stream), i+int(step))]
			if n, err := m.Write(chunk); n != len(chunk) || err != nil {
				t.Fatalf("write %d/%d: %v", n, len(chunk), err)
			}
		}
		if !bytes.Equal(got.Bytes(), payload) {
			t.Fatalf("passed on %q, want %q", got.Bytes(), payload)
		}
		if w, rest := m.status(); w != "pgid" || rest != "42" {
			t.Fatalf("status %q %q", w, rest)
		}
	})
}

func TestValidateNamesKeys(t *testing.T) {
	t.Parallel()
	ok := Config{Host: "h", User: "u", KeyPath: "/k", Workdir: "/w"}
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"host", func(c *Config) { c.Host = "" }, "environment.ssh.host: required"},
		{"host with user", func(c *Config) { c.Host = "u@h" }, "environment.ssh.host:"},
		{"user", func(c *Config) { c.User = "" }, "environment.ssh.user: required"},
		{"key", func(c *Config) { c.KeyPath = "" }, "environment.ssh.key_path: required unless use_agent"},
		{"passphrase env", func(c *Config) { c.KeyPassphraseEnv = "hunter 2" }, "environment.ssh.key_passphrase_env:"},
		{"port", func(c *Config) { c.Port = 70000 }, "environment.ssh.port:"},
		{"workdir", func(c *Config) { c.Workdir = "" }, "environment.ssh.workdir: required"},
		{"relative workdir", func(c *Config) { c.Workdir = "work" }, "environment.ssh.workdir:"},
		{"mode", func(c *Config) { c.Mode = "agent" }, "environment.ssh.mode:"},
		{"jump", func(c *Config) { c.JumpHost = "a@b:notaport" }, "environment.ssh.jump_host:"},
		{"agent only", func(c *Config) { c.KeyPath, c.UseAgent = "", true }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseJump(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, user, host string
		port             int
	}{
		{"bastion", "me", "bastion", 22},
		{"ops@bastion", "ops", "bastion", 22},
		{"ops@bastion:2222", "ops", "bastion", 2222},
		{"[::1]:2200", "me", "::1", 2200},
	}
	for _, tc := range tests {
		u, h, p, err := parseJump(tc.spec, "me")
		if err != nil || u != tc.user || h != tc.host || p != tc.port {
			t.Errorf("parseJump(%q) = %q %q %d %v", tc.spec, u, h, p, err)
		}
	}
}
