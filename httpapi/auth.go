package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Tokens maps the SHA-256 of each accepted bearer token to its name. Only hashes are
// kept: a token is compared by its hash, so the comparison's time says nothing of a secret.
type Tokens struct {
	byHash map[[sha256.Size]byte]string
}

// NewTokens starts an empty set.
func NewTokens() *Tokens { return &Tokens{byHash: map[[sha256.Size]byte]string{}} }

// Add accepts token under name.
func (t *Tokens) Add(name, token string) {
	t.byHash[sha256.Sum256([]byte(token))] = name
}

// AddHash accepts the token whose SHA-256 is sumHex under name.
func (t *Tokens) AddHash(name, sumHex string) error {
	b, err := hex.DecodeString(sumHex)
	if err != nil || len(b) != sha256.Size {
		return fmt.Errorf("token %q: sha256 must be 64 hex digits", name)
	}
	t.byHash[[sha256.Size]byte(b)] = name
	return nil
}

// Len is how many tokens are accepted.
func (t *Tokens) Len() int { return len(t.byHash) }

// lookup returns the name of token, if it is accepted.
func (t *Tokens) lookup(token string) (string, bool) {
	name, ok := t.byHash[sha256.Sum256([]byte(token))]
	return name, ok
}

// bearer is the token of an Authorization: Bearer header.
func bearer(r *http.Request) string {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return ""
	}
	return f[1]
}

type callerKey struct{}

// Caller is the name of the token the request was authenticated with.
func Caller(ctx context.Context) string {
	name, _ := ctx.Value(callerKey{}).(string)
	return name
}

// LoadOrCreateToken reads the token kept at path or, on the first start, generates one
// and keeps it there, mode 0600 in a 0700 directory. created says which; the caller shows a
// created token once. A token file that others can read is refused rather than used.
func LoadOrCreateToken(path string) (token string, created bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		fi, err := os.Stat(path)
		if err != nil {
			return "", false, fmt.Errorf("token file: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return "", false, fmt.Errorf("token file %s: mode %04o lets others read it; chmod 600 it or remove it to have a new token made", path, fi.Mode().Perm())
		}
		tok := strings.TrimSpace(string(data))
		if len(tok) < 32 {
			return "", false, fmt.Errorf("token file %s: too short to be a token; remove it to have a new token made", path)
		}
		return tok, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("token file: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, fmt.Errorf("token: %w", err)
	}
	tok := "alk_" + base64.RawURLEncoding.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	// O_EXCL: two servers starting at once do not overwrite each other's token.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreateToken(path)
		}
		return "", false, fmt.Errorf("token file: %w", err)
	}
	_, werr := f.WriteString(tok + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(path)
		return "", false, fmt.Errorf("token file: %w", err)
	}
	return tok, true, nil
}

// CheckLoopback refuses an address that is not on the loopback interface: "host:port"
// whose host is an IP of 127.0.0.0/8 or ::1, or "localhost". An empty host means every
// interface and is refused too.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return fmt.Errorf("address %q listens on %s, not loopback: anyone who can reach it could try tokens; "+
		"listen on 127.0.0.1, or pass --allow-remote (and put TLS in front) to mean it", addr, host)
}
