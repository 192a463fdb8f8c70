package configs

// The config knows backends only through their records: the tests load every backend of
// the build, as the runtime does.
import _ "github.com/airlock-dev/airlock/backend/all"
