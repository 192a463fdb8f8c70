package backend

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/backend/procgroup"
)

// DefaultTimeout is a command's timeout when neither the call, the environment nor the
// config sets one ([environment] timeout): the one default every backend and the config
// share.
const DefaultTimeout = 120 * time.Second

// FileOpTimeout bounds one file operation in the environment, whichever road it takes: a
// helper's walk by descriptor (a search, which cannot be cancelled) and the command the shell
// road runs for a read, a write or a search.
const FileOpTimeout = 2 * time.Minute

// DefaultKillGrace is the time between TERM and KILL when a timed-out or cancelled command's
// tree is stopped and nothing sets another ([environment] kill_grace).
const DefaultKillGrace = procgroup.DefaultKillGrace

// Duration is a configuration duration. In TOML it is either a number of seconds
// (`timeout = 120`, `grace = 0.5`) or a Go duration string (`idle_ttl = "30m"`).
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalTOML implements toml.Unmarshaler.
func (d *Duration) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		*d = Duration(time.Duration(x) * time.Second)
	case float64:
		*d = Duration(time.Duration(x * float64(time.Second)))
	case string:
		p, err := time.ParseDuration(x)
		if err != nil {
			return fmt.Errorf("duration %q: want seconds or a duration such as \"30s\": %w", x, err)
		}
		*d = Duration(p)
	default:
		return fmt.Errorf("duration: want seconds or a duration string, got %T", v)
	}
	if *d < 0 {
		return fmt.Errorf("duration: must not be negative")
	}
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
