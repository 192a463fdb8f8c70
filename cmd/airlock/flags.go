package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
)

// flagOutput is where a flag set made by newFlagSet writes. Parsing writes into a buffer;
// parseFlags then sends it to stdout when help was asked for (so `airlock X --help | less`
// shows it) and to stderr when the flags were wrong.
type flagOutput struct {
	s   stdio
	buf *bytes.Buffer // non-nil while parsing
}

func (o *flagOutput) Write(p []byte) (int, error) {
	if o.buf != nil {
		return o.buf.Write(p)
	}
	return o.s.err.Write(p)
}

// newFlagSet returns a flag set that does not exit, whose usage starts with "Usage: airlock "
// and usage, followed by the flags.
func newFlagSet(name, usage string, s stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&flagOutput{s: s})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: airlock %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; it returns (exit code, done) when the command should stop now:
// help asked for (printed to stdout, exit 0) or bad flags (the error and usage on stderr,
// exit 2).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	o, _ := fs.Output().(*flagOutput)
	if o != nil {
		o.buf = new(bytes.Buffer)
		defer func() { o.buf = nil }()
	}
	err := fs.Parse(args)
	var w io.Writer
	if o != nil {
		w = o.s.err
		if errors.Is(err, flag.ErrHelp) {
			w = o.s.out
		}
		_, _ = w.Write(o.buf.Bytes())
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		return 2, true
	}
	return 0, false
}

// isHelp says whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
