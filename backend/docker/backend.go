package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.Environment = (*Env)(nil)

// Deadlines of Engine API calls. Every call has one, so a daemon that stops answering turns
// into an error rather than a hang.
const (
	apiTimeout     = 30 * time.Second
	pingTimeout    = 5 * time.Second
	cleanupTimeout = 20 * time.Second
)

// Modes reported by Describe.
const (
	ModeHelper = backend.ModeHelper // "helper"; bench --mode also takes its former name, "agent"
	ModeExec   = "exec"
)

// Option adjusts construction.
type Option func(*options) error

type options struct {
	logger hclog.Logger
	egress EgressProxy
}

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("docker: nil logger")
		}
		o.logger = l
		return nil
	}
}

// Env is a container that commands run in.
type Env struct {
	cfg     Config
	cli     *client.Client
	log     hclog.Logger
	host    string // daemon address, for messages
	session string
	spec    spec
	fp      string
	name    string
	policy  backend.EnvPolicy
	imgArch string
	// helperBin and helper are the helper binary and what checking it found; the spec, and
	// so the fingerprint, name its digest.
	helperBin string
	helper    binaryInfo

	// rep brings the container and helper back when they go away, one repair at a time,
	// and owes the next result its notes; Close waits for a repair in flight.
	rep *backend.Repairer
	// prepareHook, set by tests only, runs just before and just after prepare makes sure
	// of a container (stage "ensure" and "ensured"): the moments a Close racing a repair
	// must not lose a container.
	prepareHook func(stage string)

	mu             sync.Mutex
	claimLost      bool // a warm-pool claim found the container another claimer's (see Claim)
	containerID    string
	containerEnv   []string // the container's environment, image's and ours: the base of every command's
	touchFile      string   // last-use mark inside the container, "" when the rootfs is read-only
	mode           string
	resident       *helperConn
	helperStarts   int
	notes          []string // for Describe
	runtimeNote    string   // for Describe: the OCI runtime containers run under
	userNote       string   // for Describe: whom commands run as, where "auto" chose
	helperDisabled string   // why the helper is not used, "" if it is or may be

	// egressDir, egressStop and egressServe are the session's socket directory on the host
	// and its proxy in allowlist mode (see WithEgressProxy); empty otherwise.
	egressDir   string
	egressStop  func() error
	egressServe func(ln net.Listener, callID string) (release func())
}

// New connects to the daemon, finds or creates the container cfg describes and starts the
// helper in it. Errors name what is wrong and how to fix it.
func New(ctx context.Context, cfg Config, opts ...Option) (*Env, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{logger: hclog.NewNullLogger()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	cli, host, err := newClient(cfg.Host)
	if err != nil {
		return nil, err
	}
	e := &Env{
		cfg:     cfg,
		cli:     cli,
		log:     o.logger.Named("docker"),
		host:    host,
		session: newSessionID(),
		policy:  backend.EnvPolicy{Passthrough: cfg.EnvPassthrough},
	}
	e.rep = backend.NewRepairer(e.log, e.logName, e.mended, e.prepare)
	img, rt, err := e.probe(ctx)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	e.runtimeNote, e.imgArch = rt.note, img.Architecture
	if cfg.Helper != HelperOff {
		e.helperBin, e.helper = e.checkHelper()
	}
	if o.egress != nil {
		if cfg, err = e.setupEgress(ctx, cfg, o.egress); err != nil {
			err = errors.Join(err, e.teardownEgress(context.WithoutCancel(ctx)))
			_ = cli.Close()
			return nil, err
		}
		e.cfg = cfg
	}
	cfg.User, e.userNote = resolveUser(cfg)
	e.cfg.User = cfg.User
	e.spec, err = buildSpec(cfg, img.ID, e.helper, rt.gVisor)
	if err != nil {
		err = errors.Join(fmt.Errorf("docker: %w", err), e.teardownEgress(context.WithoutCancel(ctx)))
		_ = cli.Close()
		return nil, err
	}
	if e.egressDir != "" {
		e.spec.addEgressMount(e.egressDir)
	}
	e.fp = e.spec.fingerprint()
	e.name = e.containerName()
	if cfg.Helper == HelperOff {
		e.helperDisabled = "the resident helper is off (environment.docker.helper = \"off\")"
	}
	if _, err := e.prepare(ctx, ""); err != nil {
		cerr := e.Close(ctx)
		return nil, errors.Join(err, cerr)
	}
	// A fallback is owed to the first result too, not only to Describe: a caller that reads
	// results learns why each command costs a docker exec.
	e.mu.Lock()
	owed := e.mode == ModeExec && e.cfg.Helper != HelperOff && e.helperDisabled != ""
	e.mu.Unlock()
	if owed {
		e.rep.Owe(e.helperDisabled)
	}
	return e, nil
}

// probe asks the daemon what the environment stands on before anything is made: that it
// answers, the OCI runtime in force, and the image.
func (e *Env) probe(ctx context.Context) (image.InspectResponse, ociRuntime, error) {
	if err := e.ping(ctx); err != nil {
		return image.InspectResponse{}, ociRuntime{}, err
	}
	rt, err := e.runtimeInForce(ctx)
	if err != nil {
		return image.InspectResponse{}, ociRuntime{}, err
	}
	img, err := e.inspectImage(ctx)
	return img, rt, err
}

func newClient(host string) (*client.Client, string, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, "", fmt.Errorf("docker: client: %w", err)
	}
	return cli, cli.DaemonHost(), nil
}

// ping checks the daemon answers; negotiation of the API version happens here too.
func (e *Env) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := e.cli.Ping(ctx); err != nil {
		return e.unreachable(err)
	}
	return nil
}

func (e *Env) unreachable(err error) error {
	return fmt.Errorf("%w: docker daemon at %s is unreachable (is dockerd running, and is DOCKER_HOST or environment.docker.host right?): %w",
		backend.ErrUnavailable, e.host, err)
}

func newSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ContainerID returns the ID of the container commands currently run in.
func (e *Env) ContainerID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.containerID
}

// Describe reports the container, the mode commands are started in and the isolation given.
func (e *Env) Describe() backend.Description {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := backend.Description{
		Kind:      "docker",
		Mode:      e.mode,
		Workspace: e.cfg.Workdir,
		Target:    e.name + " (" + shortID(e.containerID) + ")",
		Capabilities: backend.Capabilities{
			FilesystemIsolation: true,
			NetworkIsolation:    e.cfg.Network == "none" && e.egressDir == "",
			WritableHostMounts:  e.spec.hasWritableBind(),
			ProcessTreeKill:     true,
			ResidentHelper:      e.mode == ModeHelper,
		},
		Limits: backend.Limits{
			DefaultTimeout: e.cfg.DefaultTimeout,
			MaxOutputBytes: e.cfg.MaxOutputBytes,
			MemoryBytes:    int64(e.cfg.Memory),
			PidsLimit:      e.cfg.PidsLimit,
			NanoCPUs:       int64(e.cfg.CPUs * 1e9),
		},
		Notes: append([]string(nil), e.notes...),
		// /tmp is a tmpfs of the container's own: no other project's files are in it.
		Scratch: []string{"/tmp"},
	}
	d.Notes = append(d.Notes, e.cfg.OldKeyNotes()...)
	if e.runtimeNote != "" {
		d.Notes = append(d.Notes, e.runtimeNote)
	}
	if e.userNote != "" {
		d.Notes = append(d.Notes, e.userNote)
	}
	if strings.HasPrefix(e.cfg.User, "0") || strings.HasPrefix(e.cfg.User, "root") {
		d.Notes = append(d.Notes, "commands run as root inside the container (environment.docker.user)")
	}
	if d.Mode == ModeHelper && e.spec.HelperRunAs == "" {
		d.Notes = append(d.Notes, "the resident helper runs as the commands' own user ("+e.cfg.User+"), so a command can signal it and end the session's helper; set environment.docker.user to numbers, UID:GID, other than root's, to run it apart")
	}
	if d.Mode == ModeExec {
		d.Notes = append(d.Notes, "exec mode kills each command's process group; a process that leaves it with setsid can outlive its command inside the container until it is removed (the resident helper, a subreaper, does not have that gap)")
	}
	return d
}

func shortID(id string) string { return id[:min(len(id), 12)] }

// Close stops the helper and, unless the container is reused, removes the container. A
// reused container stays until its idle TTL passes and `airlock gc` removes it, and so does
// a warm-pool container another claimer took (see [Env.Claim]). A repair in
// flight is cancelled and waited for, so that a container it was creating is removed too.
func (e *Env) Close(ctx context.Context) error {
	release, first := e.rep.Close()
	if !first {
		return nil
	}
	defer release()
	e.mu.Lock()
	a, id, lost := e.resident, e.containerID, e.claimLost
	e.resident = nil
	e.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var errs []error
	if a != nil {
		a.close(ctx)
	}
	if !e.cfg.ReuseContainer && !lost {
		if id != "" {
			if err := e.remove(ctx, id); err != nil {
				errs = append(errs, err)
			}
		}
		if err := e.removeOwnByName(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := e.teardownEgress(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := e.cli.Close(); err != nil {
		errs = append(errs, fmt.Errorf("docker: close client: %w", err))
	}
	return errors.Join(errs...)
}

// removeOwnByName removes this session's container by its name, for one whose ID this Env
// never learnt (its create was cut short). Only a container labelled with this session is
// removed.
func (e *Env) removeOwnByName(ctx context.Context) error {
	info, err := e.inspect(ctx, e.name)
	switch {
	case cerrdefs.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case info.Config == nil || info.Config.Labels[labelOwner] != ownerValue || info.Config.Labels[labelSession] != e.session:
		return nil
	}
	return e.remove(ctx, info.ID)
}

// hostEnv is the part of the host's environment that may be forwarded: never PATH or HOME,
// which describe the host, not the container.
func hostEnv() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "PWD", "OLDPWD":
			continue
		}
		out = append(out, kv)
	}
	return out
}
