package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
)

// backendFactory opens the environment a config describes. Each backend registers one from
// a file of its own (env_local.go, env_docker.go, …).
type backendFactory func(ctx context.Context, cfg *configs.Config, log hclog.Logger) (backend.Environment, error)

var backendFactories = map[string]backendFactory{}

func registerBackend(kind string, f backendFactory) {
	if _, dup := backendFactories[kind]; dup {
		panic("airlock: duplicate backend " + kind)
	}
	backendFactories[kind] = f
}

// openEnvironment opens the backend named by environment.type.
func openEnvironment(ctx context.Context, cfg *configs.Config, log hclog.Logger) (backend.Environment, error) {
	f, ok := backendFactories[cfg.Environment.Type]
	if !ok {
		kinds := make([]string, 0, len(backendFactories))
		for k := range backendFactories {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		return nil, fmt.Errorf("environment.type: %q is not available in this build (have %s)",
			cfg.Environment.Type, strings.Join(kinds, ", "))
	}
	return f(ctx, cfg, log)
}
