package local

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/backend"
)

// NetworkConfig is what the runtime passes, among a record's Options, for [network]: the
// mode (NetworkHost or NetworkNone), variables every command gets (the egress proxy's), and
// what to stop at Close.
type NetworkConfig struct {
	Mode    string
	Env     map[string]string
	OnClose func() error
	// Attribute is the proxy's hook for naming the call behind a connection (see
	// [Config.Attribute]).
	Attribute func(backend.ConnOwner)
	// ServeCall is the proxy's hook for answering on a socket of one call's own (see
	// [Config.ServeCall]).
	ServeCall func(ln net.Listener, callID string) (release func())
}

// Network modes of the local backend.
const (
	NetworkHost = "host"
	NetworkNone = "none"
)

// setupEgress makes the directory the calls' egress sockets live in: the host's, private to
// this process's user, and bound read-only into the helper's namespace (connect(2) to a
// socket needs no write access to its directory).
func (e *Env) setupEgress() error {
	if e.cfg.ServeCall == nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "airlock-egress-")
	if err != nil {
		return fmt.Errorf("local: egress socket directory: %w", err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return fmt.Errorf("local: egress socket directory: %w", err)
	}
	e.egressDir = []string{dir}
	return nil
}

// callEgress makes the socket one command's traffic goes through, served by the proxy as
// callID's, and returns its path and what removes it. The helper relays the command's
// connections to 127.0.0.1 in its network namespace there.
func (e *Env) callEgress(callID string) (string, func(), error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := filepath.Join(e.egressDir[0], hex.EncodeToString(b[:])+".sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		return "", nil, fmt.Errorf("local: egress socket: %w", err)
	}
	release := e.cfg.ServeCall(ln, callID)
	return p, func() {
		release()
		_ = ln.Close()
		_ = os.Remove(p)
	}, nil
}
