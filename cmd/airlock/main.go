// Command airlock sits between an AI agent and the world: it takes a model's tool calls,
// decides whether each may run, runs it in an isolated environment and answers with a result
// and a receipt.
//
// Each subcommand lives in a file of its own and registers itself in init, so that the
// dispatch below never changes when one is added.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	// The collector is relaxed for start-up from package initialisation on.
	_ "github.com/airlock-dev/airlock/internal/gctune/startup"
)

// command is one subcommand. run gets the arguments after the subcommand's name and returns
// the process exit code.
type command struct {
	name    string
	summary string
	run     func(args []string, stdio stdio) int
	// hidden keeps an alias (a former name) out of the usage.
	hidden bool
}

// stdio carries the process's streams so that commands can be run in tests.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("airlock: duplicate command " + c.name)
	}
	commands[c.name] = c
}

func main() {
	// A reader that goes away (airlock exec … | head -1) must not kill airlock mid-call: the
	// command would outlive its timeout and its receipt would never be written. Writes to a
	// closed pipe fail instead, and are ignored where output is only a copy.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}

func run(args []string, s stdio) int {
	if len(args) == 0 {
		usage(s.err)
		return 2
	}
	if isHelp(args[0]) {
		usage(s.out)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(s.err, "airlock: unknown command %q\n\n", args[0])
		usage(s.err)
		return 2
	}
	return c.run(args[1:], s)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: airlock COMMAND [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'airlock COMMAND --help' for a command's flags.")
}

func init() {
	register(command{name: "version", summary: "print the version, commit and build of this binary", run: func(args []string, s stdio) int {
		fs := newFlagSet("version", "version", s)
		if code, done := parseFlags(fs, args); done {
			return code
		}
		fmt.Fprintln(s.out, versionLine(readBuildInfo()))
		return 0
	}})
}
