package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// agentSandbox registers the helper's sandbox flags; the function it returns builds the
// sandbox and the commands' private temp directory once the flags are parsed. The backend
// that starts the helper passes the roots as the remote host sees them.
func agentSandbox(fs *flag.FlagSet) func() (*sandbox.Sandbox, string, func(), error) {
	mode := fs.String("sandbox", "off", "kernel sandbox for commands: auto, landlock or off")
	var rw, ro rootList
	fs.Var(&rw, "sandbox-write", "a directory commands may write (repeatable)")
	fs.Var(&ro, "sandbox-read", "a directory commands may read (repeatable)")
	var connect portList
	fs.Var(&connect, "sandbox-connect", "a TCP port commands may connect to, e.g. the egress proxy's (repeatable)")
	return func() (*sandbox.Sandbox, string, func(), error) {
		m, err := sandbox.ParseMode(*mode)
		if err != nil {
			return nil, "", nil, err
		}
		if m == sandbox.ModeOff {
			return nil, "", func() {}, nil
		}
		tmp, err := os.MkdirTemp("", "airlock-agent-")
		if err != nil {
			return nil, "", nil, fmt.Errorf("temp dir: %w", err)
		}
		sb, err := sandbox.New(m, sandbox.Policy{ReadRoots: append(ro, rw...), WriteRoots: rw, TempDir: tmp,
			Network: sandbox.Network{ConnectTCP: connect}})
		if err != nil {
			_ = os.RemoveAll(tmp)
			return nil, "", nil, err
		}
		return sb, tmp, func() { _ = sb.Close(); _ = os.RemoveAll(tmp) }, nil
	}
}

type rootList []string

func (r *rootList) String() string { return strings.Join(*r, ",") }
func (r *rootList) Set(v string) error {
	if !strings.HasPrefix(v, "/") {
		return fmt.Errorf("%q is not an absolute path", v)
	}
	*r = append(*r, v)
	return nil
}

type portList []uint16

func (p *portList) String() string { return fmt.Sprint([]uint16(*p)) }
func (p *portList) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("%q is not a TCP port", v)
	}
	*p = append(*p, uint16(n))
	return nil
}
