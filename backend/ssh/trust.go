package ssh

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/term"

	"github.com/airlock-dev/airlock/backend"
)

// trustCommand is `airlock ssh trust HOST`, offered by the CLI from this backend's record.
var trustCommand = backend.Command{
	Name:    "ssh",
	Summary: "manage SSH hosts: 'ssh trust HOST' records a host key in known_hosts",
	Run:     runSSH,
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

const sshUsage = `Usage: airlock ssh trust [--config FILE] [--port N] [--known-hosts FILE] [--yes] HOST

trust connects to HOST, shows the SHA256 fingerprint of the key it offers and, once you
confirm (on a terminal, or with --yes after checking the fingerprint another way), appends a
hashed line for it to known_hosts. The port and known_hosts default to [environment.ssh] of
the config, then to 22 and ~/.ssh/known_hosts.
`

func runSSH(args []string, s backend.CommandIO) int {
	if len(args) == 0 {
		fmt.Fprint(s.Err, sshUsage)
		return 2
	}
	if isHelp(args[0]) {
		fmt.Fprint(s.Out, sshUsage)
		return 0
	}
	if args[0] != "trust" {
		fmt.Fprintf(s.Err, "airlock ssh: unknown subcommand %q\n\n%s", args[0], sshUsage)
		return 2
	}
	return runSSHTrust(args[1:], s)
}

func runSSHTrust(args []string, s backend.CommandIO) int {
	fs := s.NewFlagSet("ssh trust", "")
	fs.Usage = func() { fmt.Fprint(fs.Output(), sshUsage+"\nFlags:\n"); fs.PrintDefaults() }
	configFile := fs.String("config", "", "config file whose [environment.ssh] gives the defaults (default: ./airlock.toml if present)")
	port := fs.Int("port", 0, "sshd port (default: the config's, else 22)")
	knownHosts := fs.String("known-hosts", "", "known_hosts file to add to (default: the config's, else ~/.ssh/known_hosts)")
	yes := fs.Bool("yes", false, "add the key without asking: only after checking the fingerprint")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on connecting")
	// Flags may follow the host, as in `airlock ssh trust HOST --yes`.
	var rest []string
	for {
		if code, done := s.ParseFlags(fs, args); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(rest) != 1 {
		fs.Usage()
		return 2
	}

	sec, abs, err := s.LoadSection(*configFile)
	if err != nil {
		fmt.Fprintln(s.Err, "airlock ssh trust:", err)
		return 1
	}
	addr, file, err := trustTarget(*sec.(*Config), abs, rest[0], *port, *knownHosts)
	if err != nil {
		fmt.Fprintln(s.Err, "airlock ssh trust:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	key, err := ScanHostKey(ctx, addr, *timeout)
	if err != nil {
		fmt.Fprintln(s.Err, "airlock ssh trust:", err)
		return 1
	}
	fp := gossh.FingerprintSHA256(key)
	fmt.Fprintf(s.Out, "%s offers %s key %s\n", addr, key.Type(), fp)

	var he *HostKeyError
	switch err := CheckKnownHost(file, addr, key); {
	case err == nil:
		fmt.Fprintf(s.Out, "already trusted in %s\n", file)
		return 0
	case errors.As(err, &he) && (he.Changed || he.Revoked):
		fmt.Fprintf(s.Err, "airlock ssh trust: refusing: %v\n", err)
		return 1
	case !errors.As(err, &he):
		fmt.Fprintln(s.Err, "airlock ssh trust:", err)
		return 1
	}

	if !*yes && !confirmKey(s, addr, file) {
		return 1
	}
	if err := AddKnownHost(file, addr, key); err != nil {
		fmt.Fprintln(s.Err, "airlock ssh trust:", err)
		return 1
	}
	if err := CheckKnownHost(file, addr, key); err != nil {
		fmt.Fprintln(s.Err, "airlock ssh trust: the added line does not verify:", err)
		return 1
	}
	fmt.Fprintf(s.Out, "added %s %s for %s to %s\n", key.Type(), fp, addr, file)
	return 0
}

// trustTarget is the address to scan (host and port from the argument, --port or the
// config) and the known_hosts file to add to (--known-hosts or the config's, ~ expanded).
func trustTarget(defaults Config, abs func(string) string, arg string, port int, knownHosts string) (addr, file string, err error) {
	host := arg
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	p := port
	if h, ps, err := net.SplitHostPort(host); err == nil {
		host = h
		if p == 0 {
			p, _ = strconv.Atoi(ps)
		}
	}
	if p == 0 {
		p = defaults.Port
	}
	if p <= 0 || p > 65535 {
		return "", "", fmt.Errorf("port %d is not a TCP port", p)
	}
	file = abs(defaults.KnownHosts)
	if knownHosts != "" {
		file = abs(knownHosts)
	}
	if strings.HasPrefix(file, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			file = home + file[1:]
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), file, nil
}

// confirmKey asks the person at the terminal whether the offered key is addr's; false
// (said why) when they do not say yes or there is no terminal to ask.
func confirmKey(s backend.CommandIO, addr, file string) bool {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		fmt.Fprintln(s.Err, "airlock ssh trust: not a terminal: check the fingerprint above with the host's administrator, then run again with --yes")
		return false
	}
	fmt.Fprintf(s.Out, "Is this the key of %s? Add it to %s [y/N] ", addr, file)
	line, _ := bufio.NewReader(f).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		fmt.Fprintln(s.Err, "airlock ssh trust: not added")
		return false
	}
	return true
}
