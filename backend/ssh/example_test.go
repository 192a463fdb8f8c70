package ssh_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/ssh"
)

// A remote host as an environment: a refused host key says how to trust it, and every result
// says whether the connection had to be re-established first.
func ExampleNew() {
	ctx := context.Background()
	env, err := ssh.New(ctx, ssh.Config{
		Host:    "build-01.example.internal",
		User:    "deploy",
		KeyPath: "~/.ssh/id_ed25519",
		Workdir: "/srv/agent-work",
	})
	var hk *ssh.HostKeyError
	switch {
	case errors.As(err, &hk):
		fmt.Println("check", hk.Fingerprint, "then run: airlock ssh trust", hk.Host)
		return
	case err != nil:
		fmt.Println(err)
		return
	}
	defer env.Close(ctx)
	res, err := env.Exec(ctx, backend.Request{Command: "uname -a", Dir: "."})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s%v\n", res.Stdout, res.Notes)
}
