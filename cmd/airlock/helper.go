package main

import (
	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/helper/helpercmd"
)

// The helper subcommand is the resident helper that the Docker, SSH and Kubernetes backends
// start inside their environment (package helpercmd; cmd/airlock-helper is the same helper
// in a binary of its own). It was called agent, a word that means the AI agent everywhere
// else; `airlock agent` stays as a hidden alias, so that a command line written for an
// older airlock still starts the helper.
func init() {
	run := func(args []string, s stdio) int {
		return helpercmd.Main("airlock", args, s.in, s.out, s.err)
	}
	register(command{name: helper.Subcommand, summary: "run the resident command helper (started by backends, speaks on stdin/stdout)", run: run})
	register(command{name: helper.OldSubcommand, hidden: true, run: run})
}
