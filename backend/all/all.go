// Package all registers every backend of this build: importing it runs each backend's
// init, which registers its [backend.Record]. A new backend adds one line here and nothing
// anywhere else — not in configs, not in cmd.
package all

import (
	_ "github.com/airlock-dev/airlock/backend/docker"     // registers "docker"
	_ "github.com/airlock-dev/airlock/backend/kubernetes" // registers "kubernetes"
	_ "github.com/airlock-dev/airlock/backend/local"      // registers "local"
	_ "github.com/airlock-dev/airlock/backend/ssh"        // registers "ssh"
)
