package engine

import (
	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/configs"
)

// backendOptions are what the runtime adds to some backends from the config's other
// sections — the local kernel sandbox from the path policy, Docker's network from
// [network] — applied to sec, the session's own copy of the section. A backend without an
// entry here (ssh, and any new one) opens from its section alone.
func backendOptions(cfg *configs.Config, sec any, session string, log hclog.Logger) ([]any, error) {
	switch c := sec.(type) {
	case *local.Section:
		sb := localSandbox(cfg, c)
		nc, err := localNetwork(cfg, &sb, session, log)
		if err != nil {
			return nil, err
		}
		opts := []any{sb, nc}
		for _, o := range localOptions() {
			opts = append(opts, o)
		}
		return opts, nil
	case *ssh.Config:
		return nil, sshNetwork(cfg)
	case *docker.Config:
		netOpts, err := dockerNetwork(cfg, c, session, log)
		if err != nil {
			return nil, err
		}
		opts := make([]any, len(netOpts))
		for i, o := range netOpts {
			opts[i] = o
		}
		return opts, nil
	}
	return nil, nil
}
