package kubernetes

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

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
)

var _ backend.Environment = (*Env)(nil)

// Deadlines of API calls. Every call has one, so an API server that stops answering turns
// into an error rather than a hang; waits for a pod have pod_start_timeout.
const (
	apiTimeout     = 30 * time.Second
	cleanupTimeout = 30 * time.Second
	// touchEvery is how often the pod's last-use annotation is brought up to date.
	touchEvery = time.Minute
)

// ModeHelper is the one mode: commands go to the resident helper.
const ModeHelper = backend.ModeHelper

var (
	errUnavailable = backend.ErrUnavailable
	// errNoCluster is no client configuration at all: not in a cluster, no kubeconfig
	// named, KUBECONFIG unset and no ~/.kube/config.
	errNoCluster = errors.New("no cluster configured")
	readFile     = os.ReadFile
)

// Option adjusts construction.
type Option func(*options) error

type options struct {
	logger hclog.Logger
	egress backend.EgressProxy // [network] mode allowlist (see WithEgressProxy)
}

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("kubernetes: nil logger")
		}
		o.logger = l
		return nil
	}
}

// Env is a pod that commands run in.
type Env struct {
	cfg     Config
	cl      *cluster
	log     hclog.Logger
	session string // the runtime session's name, or an id of this Env's own
	spec    corev1.PodSpec
	fp      string
	name    string
	policy  backend.EnvPolicy
	helper  *helper.Binary
	// helperProblem says why there is no helper binary to install.
	helperProblem string
	// egressStop and egressServe are the session's egress proxy in [network] mode
	// allowlist (egress.go); nil otherwise. Set in New, read-only after.
	egressStop  func() error
	egressServe func(ln net.Listener, callID string) (release func())

	// rep brings the pod and helper back when they go away, one repair at a time, and owes
	// the next result its notes; Close waits for a repair in flight.
	rep *backend.Repairer

	mu        sync.Mutex
	podUID    types.UID
	node      string
	podEnv    []string // the container's environment: the base of every command's
	resident  *helperConn
	netNote   string // how [network] is held, for Describe
	rtNote    string // whether the runtime class exists, for Describe
	lastTouch time.Time
	// claimedBy is the session that claimed this warm-pool pod; claimLost says another
	// claimer holds it, so Close leaves it alone (see pool.go).
	claimedBy string
	claimLost bool
	// lost is closed when an unclaimed member's pod goes away (see [Env.Lost]).
	lost     chan struct{}
	lostOnce sync.Once
}

// New connects to the API server, finds or creates the session's pod and starts the helper
// in it. Errors name what is wrong and how to fix it.
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
	cl, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg, cl: cl, log: o.logger.Named("kubernetes"), session: cfg.Session,
		policy: backend.EnvPolicy{Passthrough: cfg.EnvPassthrough}, lost: make(chan struct{})}
	if e.session == "" {
		e.session = "e" + newID()
	}
	e.rep = backend.NewRepairer(e.log, e.logName, e.mended, e.prepare)
	if b, err := helperBinary(cfg.HelperBinary); err != nil {
		e.helperProblem = "resident helper unavailable: " + err.Error()
	} else {
		e.helper = b
	}
	spec, err := podSpec(cfg)
	if err != nil {
		err = fmt.Errorf("kubernetes: %w", err)
	} else if cfg.Network == backend.NetworkAllowlist {
		err = e.startEgress(ctx, o.egress)
	}
	if err != nil {
		release, _ := e.rep.Close()
		release()
		return nil, err
	}
	e.spec = spec
	digest := ""
	if e.helper != nil {
		digest = e.helper.Digest
	}
	e.fp = fingerprint(spec, cfg, e.session, digest)
	e.name = podName(e.fp)
	e.spec = withClaim(spec, e.name)
	if _, err := e.prepare(ctx, ""); err != nil {
		return nil, errors.Join(err, e.Close(ctx))
	}
	go e.watchPod()
	note := e.runtimeClassNote()
	e.mu.Lock()
	e.rtNote = note
	e.mu.Unlock()
	return e, nil
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PodName returns the name of the pod commands run in.
func (e *Env) PodName() string { return e.name }

// Namespace returns the namespace of the pod.
func (e *Env) Namespace() string { return e.cl.namespace }

// Describe reports the pod, what the cluster enforces and the isolation given.
func (e *Env) Describe() backend.Description {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := backend.Description{
		Kind:      "kubernetes",
		Mode:      ModeHelper,
		Workspace: e.cfg.Workdir,
		Target:    e.cl.namespace + "/" + e.name + " on " + e.node + " (" + e.cl.host + ")",
		Capabilities: backend.Capabilities{
			FilesystemIsolation: true,
			NetworkIsolation:    e.cfg.Network == backend.NetworkNone, // allowlist: through the proxy
			ProcessTreeKill:     true,
			ResidentHelper:      e.resident != nil,
		},
		Limits: backend.Limits{
			DefaultTimeout: e.cfg.DefaultTimeout,
			MaxOutputBytes: e.cfg.MaxOutputBytes,
			MemoryBytes:    quantityValue(e.cfg.MemoryLimit),
			NanoCPUs:       quantityMilli(e.cfg.CPULimit) * 1e6,
		},
		Scratch: []string{"/tmp"},
	}
	d.Notes = append(d.Notes, e.securityNote())
	d.Notes = append(d.Notes, e.cfg.OldKeyNotes()...)
	if e.netNote != "" {
		d.Notes = append(d.Notes, e.netNote)
	}
	d.Notes = append(d.Notes, e.rtNote, "the resident helper runs as the commands' own user (uid "+fmt.Sprint(runAsID)+"), so a command can signal it and end the session's helper; the next call starts it again")
	if n := helper.SiblingNote(); e.cfg.HelperBinary == "" && e.helperProblem == "" && n != "" {
		d.Notes = append(d.Notes, n)
	}
	return d
}

// securityNote is the pod's effective security settings, as doctor shows them.
func (e *Env) securityNote() string {
	sa := "the namespace's default service account"
	if e.cfg.ServiceAccount != "" {
		sa = "service account " + e.cfg.ServiceAccount
	}
	ws := "emptyDir"
	if e.usesClaim() {
		ws = "PersistentVolumeClaim " + e.name
	}
	return fmt.Sprintf("pod security: uid/gid %d (non-root), no privilege escalation, all capabilities dropped, seccomp RuntimeDefault, read-only root filesystem (writable: %s on %s, /tmp on an emptyDir), %s with its token not mounted, limits cpu %s memory %s",
		runAsID, e.cfg.Workdir, ws, sa, e.cfg.CPULimit, e.cfg.MemoryLimit)
}

// Close stops the helper and deletes the pod, unless it belongs to a named session, whose
// later processes find it again (gc deletes it once its idle TTL passes), or is a warm-pool
// pod another claimer took. A repair in
// flight is cancelled and waited for.
func (e *Env) Close(ctx context.Context) error {
	release, first := e.rep.Close()
	if !first {
		return nil
	}
	defer release()
	e.mu.Lock()
	a, uid, lost := e.resident, e.podUID, e.claimLost
	e.resident = nil
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if a != nil {
		a.close(ctx)
	}
	stopped := e.stopEgress()
	if e.cfg.Session != "" || lost {
		return stopped
	}
	return errors.Join(stopped, e.deletePod(ctx, uid, false), e.deleteNetworkPolicy(ctx), e.deleteClaim(ctx))
}

// apiErr wraps an API error; an API server that does not answer is unavailable.
func (e *Env) apiErr(op string, err error) error {
	if isUnreachable(err) {
		return fmt.Errorf("%w: kubernetes %s: API server %s does not answer: %w", backend.ErrUnavailable, op, e.cl.host, err)
	}
	return fmt.Errorf("kubernetes %s %s/%s: %w", op, e.cl.namespace, e.name, err)
}

// hostEnv is the part of the host's environment that may be forwarded: never PATH or HOME,
// which describe the host, not the pod.
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
