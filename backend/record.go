package backend

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Record is what a backend declares about itself, once, from its package's init — the way
// a Nomad task driver declares its config schema and capabilities. The config loader, the
// runtime, `airlock gc` and `airlock bench` work from records, so none of them names a
// backend type, and a new backend is added by writing its package and one import line in
// backend/all.
type Record struct {
	// Kind is the backend's name: the value of environment.type and the name of its config
	// section, [environment.KIND].
	Kind string
	// Summary says in a few words what the backend is, for help text.
	Summary string
	// Schema is the JSON Schema of [environment.KIND] (draft 2020-12, an object).
	Schema []byte
	// NewConfig returns a pointer to the section's defaults; the TOML section is decoded
	// over it.
	NewConfig func() any
	// Renamed maps the former name of a key of [environment.KIND] to its current name, for
	// keys renamed since a configuration may have been written. configs reads a key given
	// under its former name as the current one, refuses a file that gives both (the error
	// names both keys: which value was meant cannot be told), and gives the section a note
	// for each former name used, which the backend's Describe shows: the section then embeds
	// [OldKeys]. The schema keeps the former names, marked deprecated, since a file is checked
	// against it before it is decoded. A section built in code has only the current names.
	Renamed map[string]string
	// Validate checks a decoded section beyond its schema; nil when the schema says all.
	Validate func(section any) error
	// Derive adapts section — the environment's own copy — to the runtime's [Policy] and
	// returns the options Open then gets in [Settings.Options] (a kernel sandbox from the
	// path policy, a network from [network]). The runtime calls it before every Open
	// without knowing the kind; nil when the section alone says all.
	Derive func(section any, p Policy) (options []any, err error)
	// Open starts an environment.
	Open func(ctx context.Context, s Settings) (Environment, error)
	// PerSession is true when each session gets an environment of its own (a container
	// per session); otherwise one environment serves every session.
	PerSession bool
	// WarmPool is true when the backend can keep ready sandboxes for new sessions (see
	// pool.go): its sections implement [Pooled] and an environment opened with
	// [Settings.PoolMember] implements [Claimer]. Only a PerSession backend can.
	WarmPool bool
	// Modes are the ways the backend can start commands (for bench --mode), the fast one
	// first; SetMode applies one to a section. Nil for a backend with one way.
	Modes   []string
	SetMode func(section any, mode string) error
	// GC removes what the backend left behind (nil when it leaves nothing).
	GC func(ctx context.Context, section any, opts GCOptions) ([]GCItem, error)
	// Capabilities are the most the backend can give; an environment's Describe says what
	// it gives as configured.
	Capabilities Capabilities
	// Commands are backend-specific subcommands (`airlock ssh trust`).
	Commands []Command
}

// Settings is what [Record.Open] gets: its section and the settings every backend shares.
type Settings struct {
	// Section is the decoded [environment.KIND], of the type NewConfig returns, with
	// relative paths already resolved against the config file (see [Resolver]).
	Section any
	// Workspace is the host workspace (absolute) for backends that work on the host.
	Workspace      string
	DefaultTimeout time.Duration
	MaxOutputBytes int64
	EnvPassthrough []string
	KillGrace      time.Duration
	// Session is the runtime session the environment is for, "" for one shared by all.
	Session string
	// Options are what the record's Derive returned (a kernel sandbox, an egress proxy),
	// plus any a test adds; a backend ignores what it does not know.
	Options []any
	Logger  hclog.Logger
	// PoolMember asks for a warm-pool sandbox (see [Claimer]) rather than a session's; only
	// set for records with WarmPool.
	PoolMember bool
}

// Resolver is implemented by sections with host paths in them: Resolve makes them
// absolute with abs (which resolves against the config file's directory).
type Resolver interface {
	Resolve(abs func(string) string)
}

// Mounter is implemented by sections that mount host directories into the environment:
// the runtime protects Airlock's own files where a mount makes them visible.
type Mounter interface {
	Mounts() []Mount
}

// Networked is implemented by sections that choose the environment's network themselves
// (Docker's network key): the config refuses one that disagrees with [network] mode.
type Networked interface {
	// NetworkSetting is the section's network, "" or "none" for none.
	NetworkSetting() string
}

// OnHost is implemented by sections of backends whose commands see the host's own paths
// (the local backend): the runtime then protects Airlock's files at their host paths.
type OnHost interface {
	HostWorkspace() bool
}

// Mount is a host directory and where the environment sees it.
type Mount struct{ Host, Inside string }

// GCOptions says what `airlock gc` may remove.
type GCOptions struct {
	All, DryRun, AllOwners bool
	MinAge                 time.Duration
}

// GCItem is one thing gc looked at: removed (or, on a dry run, would remove), failed, or
// left alone as another owner's.
type GCItem struct {
	ID, Name, State string
	Reason          string
	Removed         bool
	Err             error
	OtherOwner      string
}

// Command is a backend's own subcommand (`airlock ssh trust`), which the CLI offers
// without knowing the backend.
type Command struct {
	Name, Summary string
	// Run gets the arguments after the name; it returns the exit code.
	Run func(args []string, io CommandIO) int
}

// CommandIO is what the CLI hands a backend's command: its streams, the CLI's own way of
// parsing flags (help on stdout, errors on stderr), and a loader of the backend's section
// from a config file ("" for the default one), with the function that resolves a path from
// that config.
type CommandIO struct {
	In          io.Reader
	Out, Err    io.Writer
	NewFlagSet  func(name, usage string) *flag.FlagSet
	ParseFlags  func(fs *flag.FlagSet, args []string) (code int, done bool)
	LoadSection func(file string) (section any, abs func(string) string, err error)
}

var (
	recordsMu sync.RWMutex
	records   = map[string]Record{}
)

// Register adds a backend's record. It panics on a duplicate or incomplete record: that is
// a programming error found at start-up.
func Register(r Record) {
	if r.Kind == "" || r.NewConfig == nil || r.Open == nil || len(r.Schema) == 0 {
		panic(fmt.Sprintf("backend: incomplete record %q", r.Kind))
	}
	if _, ok := r.NewConfig().(Pooled); r.WarmPool && (!ok || !r.PerSession) {
		panic(fmt.Sprintf("backend: record %q declares WarmPool without per-session environments and a Pooled section", r.Kind))
	}
	if _, ok := r.NewConfig().(OldKeyNoter); len(r.Renamed) > 0 && !ok {
		panic(fmt.Sprintf("backend: record %q declares Renamed keys and its section does not embed OldKeys", r.Kind))
	}
	recordsMu.Lock()
	defer recordsMu.Unlock()
	if _, dup := records[r.Kind]; dup {
		panic("backend: duplicate record " + r.Kind)
	}
	records[r.Kind] = r
}

// Lookup returns the record of a kind.
func Lookup(kind string) (Record, bool) {
	recordsMu.RLock()
	defer recordsMu.RUnlock()
	r, ok := records[kind]
	return r, ok
}

// Records returns every registered record, by kind.
func Records() []Record {
	recordsMu.RLock()
	defer recordsMu.RUnlock()
	out := make([]Record, 0, len(records))
	for _, r := range records {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	rs := Records()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Kind
	}
	return out
}
