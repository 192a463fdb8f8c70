package backendtest

import (
	"context"
	"sync"

	"github.com/airlock-dev/airlock/backend"
)

// Call is one command run for a call (its ID given with [backend.WithCall]).
type Call struct{ ID, Command string }

// ExecCalls runs every call's command on env at the same time and returns what each
// printed (stdout, then stderr), or the text of the error its Exec returned.
func ExecCalls(ctx context.Context, env backend.Environment, calls []Call) []string {
	var wg sync.WaitGroup
	outs := make([]string, len(calls))
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := env.Exec(backend.WithCall(ctx, c.ID), backend.Request{Command: c.Command})
			if err != nil {
				outs[i] = err.Error()
				return
			}
			outs[i] = string(res.Stdout) + string(res.Stderr)
		}()
	}
	wg.Wait()
	return outs
}
