package helper

import (
	"io"
	"net"
	"time"
)

// hello opens the stream in each direction.
type hello struct {
	Version int    `json:"version"`
	Role    string `json:"role"` // "client" or "server"
	PID     int    `json:"pid,omitempty"`
	// Source (server only) is the helper's SourceFingerprint.
	Source string `json:"source,omitempty"`
	// SandboxEnforced and SandboxNotes (server only) say whether commands run under the
	// kernel sandbox and what it enforces.
	SandboxEnforced bool     `json:"sandbox_enforced,omitempty"`
	SandboxNotes    []string `json:"sandbox_notes,omitempty"`
}

// startMsg asks the server to run one command.
type startMsg struct {
	Argv      []string `json:"argv,omitempty"`
	Command   string   `json:"command,omitempty"`
	Dir       string   `json:"dir"`
	Workspace string   `json:"workspace,omitempty"`
	Env       []string `json:"env"`
	// SameEnv, with no Env, asks for the environment of the previous start on this stream
	// (see Client.sendStart): a backend builds one environment per session, ~2 KB that each
	// side would otherwise encode and decode again for every command.
	SameEnv        bool  `json:"same_env,omitempty"`
	Stdin          bool  `json:"stdin"`
	TimeoutMS      int64 `json:"timeout_ms"`
	KillGraceMS    int64 `json:"kill_grace_ms"`
	MaxOutputBytes int64 `json:"max_output_bytes"`
	// Live asks for a copy of the output in live frames as the command writes it, besides
	// the capped output sent before the exit.
	Live bool `json:"live,omitempty"`
	// EgressSocket, when set, is the unix socket the command's network traffic is relayed
	// to (egress.go).
	EgressSocket string `json:"egress_socket,omitempty"`
	// EgressTunnel asks for the command's network traffic to be relayed back over the
	// stream (tunnel.go).
	EgressTunnel bool `json:"egress_tunnel,omitempty"`
}

// Error kinds in exitMsg, mapped back to backend sentinels by the client.
const (
	kindInvalid = "invalid_request"
	kindOutside = "outside_workspace"
	kindStart   = "start"
)

// exitMsg ends a request. Output was sent before it in stdout and stderr frames.
type exitMsg struct {
	ExitCode    int    `json:"exit_code"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	Cancelled   bool   `json:"cancelled,omitempty"`
	Truncated   bool   `json:"truncated,omitempty"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	DurationNS  int64  `json:"duration_ns"`
	Error       string `json:"error,omitempty"`
	ErrorKind   string `json:"error_kind,omitempty"`
}

// Request is one command for the helper. Unlike [backend.Request] it is already resolved by
// the caller: Env is the complete environment, Dir is absolute and the defaults are applied.
type Request struct {
	// Argv runs a program directly; Command runs through the server's shell. Exactly one is set.
	Argv    []string
	Command string
	// Dir is the absolute working directory.
	Dir string
	// Workspace, when set, is where Dir must lie once its symlinks are resolved (on the
	// server's side); a Dir that leaves it is refused with backend.ErrOutsideWorkspace.
	Workspace string
	// Env is the command's whole environment as NAME=value pairs.
	Env []string
	// Stdin, when set, is streamed to the command; nil means an empty stdin.
	Stdin io.Reader
	// Timeout bounds the run; zero means no limit.
	Timeout time.Duration
	// KillGrace is the time between TERM and KILL; zero means one second.
	KillGrace time.Duration
	// MaxOutputBytes caps each output stream at the source; zero means
	// backend.DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Stdout and Stderr, when set, get a live copy of the output as the helper reads it
	// from the command (see [backend.Request.Stdout]); the Result then says Streamed. They
	// are written from a goroutine of the call's own, never from the stream's read loop,
	// and everything is written before Exec returns.
	Stdout, Stderr io.Writer
	// EgressSocket, when set, is a unix socket (a path on the helper's side) that answers as
	// Airlock's egress proxy for this command: the helper listens on 127.0.0.1 for the
	// command, sets its proxy variables (see [EgressVars]) to that port and relays each
	// connection there to the socket. For a command whose only network is its loopback.
	EgressSocket string
	// EgressTunnel, when set, is called once before the command starts with a listener whose
	// connections are the command's: the helper listens on 127.0.0.1 for the command, points
	// its proxy variables there, and carries each connection back over the stream (see
	// tunnel.go). The backend hands the listener to Airlock's egress proxy as the call's
	// (backend.Egress.ServeCall); release runs when the command is over. For a command whose
	// sandbox has no other way out, not even to a socket of the host's. Exclusive with
	// EgressSocket.
	EgressTunnel func(ln net.Listener) (release func())
}

// stdinWindow is the stdin credit each request starts with: what the server may have to
// buffer for a command that does not read its input.
const stdinWindow = 256 << 10

// stdinChunk is the largest stdin frame the client sends.
const stdinChunk = 32 << 10

// outputChunk is the largest output frame the server sends.
const outputChunk = 64 << 10
