// Command airlock-helper is Airlock's resident command helper in a binary of its own: the
// same code as `airlock helper` and as the local backend's helper, linking nothing else.
//
// airlock starts it in its place when it lies beside the airlock executable and comes from
// the same build (backend/helper.Sibling says how that is decided): the local backend's
// helper then starts in a few milliseconds instead of paying for the ~400 packages the
// airlock binary initialises, and the Docker, SSH and Kubernetes backends copy ~6 MB into an
// environment instead of 84 MB. Without it, airlock uses itself, and nothing is weaker.
//
//	go build -o airlock ./cmd/airlock && go build -o airlock-helper ./cmd/airlock-helper
//
// It takes the command line `airlock helper` takes (`airlock-helper helper [flags]`; the former
// name, agent, is still accepted). Started under the name airlock-helper with no arguments, it
// is the local backend's helper (package helper's start-up, before main).
package main

import (
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/helper/helpercmd"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != helper.Subcommand && os.Args[1] != helper.OldSubcommand {
		fmt.Fprintf(os.Stderr, "Usage: airlock-helper %s\n\nStarted by airlock; not a command for people.\n", helpercmd.Usage)
		os.Exit(2)
	}
	os.Exit(helpercmd.Main("airlock-helper", os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}
