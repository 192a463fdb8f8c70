package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError refuses a host whose key is not in known_hosts, or differs from the one there.
// It carries what the user needs to decide: the key the host offered and how to trust it.
type HostKeyError struct {
	// Host is the address as checked, host:port.
	Host string
	// KeyType is the offered key's type, e.g. "ssh-ed25519".
	KeyType string
	// Fingerprint is the offered key's SHA256 fingerprint, as ssh-keygen -l prints it.
	Fingerprint string
	// Changed is set when known_hosts holds other keys for the host (a possible attack, or a
	// reinstalled host); otherwise the host is unknown.
	Changed bool
	// Revoked is set when the offered key is marked @revoked.
	Revoked bool
	// KnownHosts is the file consulted.
	KnownHosts string
	// Known lists the file:line entries that exist for the host when Changed.
	Known []string
}

func (e *HostKeyError) Error() string {
	host, port, _ := net.SplitHostPort(e.Host)
	trust := "airlock ssh trust " + host
	scan := "ssh-keyscan " + host
	if port != "" && port != "22" {
		trust = "airlock ssh trust --port " + port + " " + host
		scan = "ssh-keyscan -p " + port + " " + host
	}
	offered := e.KeyType + " " + e.Fingerprint
	switch {
	case e.Revoked:
		return fmt.Sprintf("ssh: host key of %s is revoked in %s (offered %s)", e.Host, e.KnownHosts, offered)
	case e.Changed:
		return fmt.Sprintf("ssh: HOST KEY CHANGED for %s: it offered %s, which is not the key recorded in %s (%s); "+
			"this may be an attack. If the host was really reinstalled, remove the old entry "+
			"(ssh-keygen -R %s -f %s) and run: %s",
			e.Host, offered, e.KnownHosts, strings.Join(e.Known, ", "), knownhosts.Normalize(e.Host), e.KnownHosts, trust)
	default:
		return fmt.Sprintf("ssh: host key of %s is unknown: it offered %s, not in %s; "+
			"if that fingerprint is the host's, run: %s (or append the output of %s to %s)",
			e.Host, offered, e.KnownHosts, trust, scan, e.KnownHosts)
	}
}

// hostKeyChecker verifies host keys against one known_hosts file, reread at every check so
// that `airlock ssh trust` takes effect without a restart.
type hostKeyChecker struct {
	file string
}

func (h hostKeyChecker) load() (gossh.HostKeyCallback, error) {
	cb, err := knownhosts.New(h.file)
	if errors.Is(err, fs.ErrNotExist) {
		// A missing file knows no host: every key is unknown, and the error says how to add it.
		return func(string, net.Addr, gossh.PublicKey) error { return &knownhosts.KeyError{} }, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ssh: known_hosts %s: %w", h.file, err)
	}
	return cb, nil
}

// callback returns the HostKeyCallback for one handshake.
func (h hostKeyChecker) callback() (gossh.HostKeyCallback, error) {
	cb, err := h.load()
	if err != nil {
		return nil, err
	}
	return func(hostname string, remote net.Addr, key gossh.PublicKey) error {
		return h.explain(hostname, key, cb(hostname, remote, key))
	}, nil
}

// explain turns knownhosts' errors into a *HostKeyError.
func (h hostKeyChecker) explain(hostname string, key gossh.PublicKey, err error) error {
	if err == nil {
		return nil
	}
	he := &HostKeyError{
		Host:        hostname,
		KeyType:     key.Type(),
		Fingerprint: gossh.FingerprintSHA256(key),
		KnownHosts:  h.file,
	}
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &ke):
		he.Changed = len(ke.Want) > 0
		for _, w := range ke.Want {
			he.Known = append(he.Known, fmt.Sprintf("%s:%d %s", w.Filename, w.Line, w.Key.Type()))
		}
	case errors.As(err, &re):
		he.Revoked = true
	default:
		return err
	}
	return he
}

// algorithms returns the host key algorithms to ask for so that the host offers a key type
// known_hosts holds for it; nil (the library's defaults) for an unknown host. Without this a
// host with several keys may offer one we do not have and look "changed".
func (h hostKeyChecker) algorithms(hostport string) []string {
	cb, err := h.load()
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if !errors.As(cb(hostport, probeAddr, probeKey()), &ke) {
		return nil
	}
	var algs []string
	seen := map[string]bool{}
	for _, w := range ke.Want {
		t := w.Key.Type()
		if seen[t] {
			continue
		}
		seen[t] = true
		if t == gossh.KeyAlgoRSA {
			algs = append(algs, gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256)
		}
		algs = append(algs, t)
	}
	return algs
}

// probeAddr is the remote address given to a known_hosts callback, which only records it.
var probeAddr net.Addr = &net.TCPAddr{IP: net.IPv4zero}

// probeKey is a key no host has, used to ask known_hosts which keys it holds for a host.
// It is made on first use, not at start: generating it was the dearest package
// initialisation of every airlock process (~1 ms), SSH or not.
var probeKey = sync.OnceValue(func() gossh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic("ssh: generate probe key: " + err.Error())
	}
	k, err := gossh.NewPublicKey(pub)
	if err != nil {
		panic("ssh: probe key: " + err.Error())
	}
	return k
})

// errKeyCaptured stops a handshake once the host key is known.
var errKeyCaptured = errors.New("host key captured")

// ScanHostKey connects to addr (host:port), completes the key exchange and returns the key
// the host offers, without authenticating. It is what `airlock ssh trust` shows the user.
func ScanHostKey(ctx context.Context, addr string, timeout time.Duration) (gossh.PublicKey, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh: scan %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	var key gossh.PublicKey
	_, _, _, err = gossh.NewClientConn(conn, addr, &gossh.ClientConfig{
		User: "airlock-trust",
		HostKeyCallback: func(_ string, _ net.Addr, k gossh.PublicKey) error {
			key = k
			return errKeyCaptured
		},
		Timeout: timeout,
	})
	if key == nil {
		return nil, fmt.Errorf("ssh: scan %s: %w", addr, err)
	}
	return key, nil
}

// CheckKnownHost reports whether knownHostsFile accepts key for addr (host:port): nil, or a
// [*HostKeyError] saying whether the host is unknown or known with another key.
func CheckKnownHost(knownHostsFile, addr string, key gossh.PublicKey) error {
	h := hostKeyChecker{file: knownHostsFile}
	cb, err := h.load()
	if err != nil {
		return err
	}
	return h.explain(addr, key, cb(addr, probeAddr, key))
}

// AddKnownHost appends a hashed known_hosts line for addr (host:port) and key, creating the
// file (0600) and its directory (0700) if needed.
func AddKnownHost(knownHostsFile, addr string, key gossh.PublicKey) error {
	if err := os.MkdirAll(filepath.Dir(knownHostsFile), 0o700); err != nil {
		return fmt.Errorf("ssh: known_hosts: %w", err)
	}
	line := knownhosts.Line([]string{knownhosts.HashHostname(knownhosts.Normalize(addr))}, key)
	f, err := os.OpenFile(knownHostsFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("ssh: known_hosts: %w", err)
	}
	// A file that does not end in a newline would glue our line onto its last one.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		if last, err := lastByte(knownHostsFile); err == nil && last != '\n' {
			line = "\n" + line
		}
	}
	_, werr := f.WriteString(line + "\n")
	return errors.Join(werr, f.Close())
}

func lastByte(name string) (byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, fi.Size()-1); err != nil {
		return 0, err
	}
	return b[0], nil
}
