package main

import (
	"flag"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
)

// The backends' own commands (airlock ssh trust) come from their records: the CLI offers
// them without knowing any backend. Records are registered by the time main's init runs.
func init() {
	for _, rec := range backend.Records() {
		for _, c := range rec.Commands {
			register(command{name: c.Name, summary: c.Summary, run: func(args []string, s stdio) int {
				return c.Run(args, backendIO(rec.Kind, s))
			}})
		}
	}
}

// backendIO is what a backend's command gets: the streams, the CLI's flag conventions and
// its section of the config.
func backendIO(kind string, s stdio) backend.CommandIO {
	return backend.CommandIO{
		In: s.in, Out: s.out, Err: s.err,
		NewFlagSet: func(name, usage string) *flag.FlagSet { return newFlagSet(name, usage, s) },
		ParseFlags: parseFlags,
		LoadSection: func(file string) (any, func(string) string, error) {
			cfg, err := configs.Load(file)
			if err != nil {
				return nil, nil, err
			}
			sec := cfg.Environment.Section(kind)
			if sec == nil {
				return nil, nil, fmt.Errorf("environment.%s: no such backend in this build", kind)
			}
			return sec, cfg.Abs, nil
		},
	}
}
