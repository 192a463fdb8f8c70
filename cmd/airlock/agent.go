package main

import "github.com/airlock-dev/airlock/backend/helper/helpercmd"

// The agent subcommand is the resident helper that the Docker, SSH and Kubernetes backends
// start inside their environment (package helpercmd; cmd/airlock-helper is the same helper
// in a binary of its own).
func init() {
	register(command{name: "agent", summary: "run the resident command helper (started by backends, speaks on stdin/stdout)", run: func(args []string, s stdio) int {
		return helpercmd.Main("airlock", args, s.in, s.out, s.err)
	}})
}
