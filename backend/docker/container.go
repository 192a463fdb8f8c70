package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Labels on every container this package creates. gc finds containers by labelOwner, keeps
// to those of the user who runs it (labelUID and labelHostname) and decides with the others.
const (
	labelOwner       = "dev.airlock.owner"
	ownerValue       = "airlock"
	labelUID         = "dev.airlock.uid"
	labelSession     = "dev.airlock.session"
	labelFingerprint = "dev.airlock.fingerprint"
	labelCreatedAt   = "dev.airlock.created-at"
	labelIdleTTL     = "dev.airlock.idle-ttl"
	labelPID         = "dev.airlock.pid"
	labelPIDStart    = "dev.airlock.pid-start"
	labelHostname    = "dev.airlock.hostname"
	labelReuse       = "dev.airlock.reuse"
	labelLastUse     = "dev.airlock.last-use-file"
)

// markDir holds the helper. It is root-owned and writable by root only, so commands
// (running as another user) can neither write nor replace anything in it: a directory of the
// root filesystem made when the container is created or, when the root filesystem is
// read-only, a tmpfs of its own. The helper is checked there before every start. The
// last-use mark, which commands in exec mode touch themselves and which holds nothing but a
// time read by gc, lives beside it, not in it.
const (
	markDir     = "/.airlock"
	lastUseFile = "/.airlock-last-use"
)

func (e *Env) inspectImage(ctx context.Context) (image.InspectResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	img, err := e.cli.ImageInspect(ctx, e.cfg.Image)
	switch {
	case cerrdefs.IsNotFound(err):
		return img, fmt.Errorf("docker: image %q not found on the daemon at %s: load it first with docker pull %[1]s, docker load -i FILE.tar, or docker import ROOTFS.tar %[1]s",
			e.cfg.Image, e.host)
	case client.IsErrConnectionFailed(err):
		return img, e.unreachable(err)
	case err != nil:
		return img, fmt.Errorf("docker: image inspect %q: %w", e.cfg.Image, err)
	}
	return img, nil
}

// containerName is prefix + fingerprint for a reused container (so that the same
// configuration finds the same container), prefix + "pool-" + ID for a warm-pool member not
// yet claimed, prefix + "s" + ID otherwise (and once claimed; see [Env.Claim]).
func (e *Env) containerName() string {
	switch {
	case e.cfg.ReuseContainer:
		return e.cfg.ContainerNamePrefix + e.fp[:16]
	case e.cfg.PoolMember:
		return e.poolName()
	}
	return e.sessionName()
}

func (e *Env) sessionName() string { return e.cfg.ContainerNamePrefix + "s" + e.session }
func (e *Env) poolName() string    { return e.cfg.ContainerNamePrefix + "pool-" + e.session }

func (e *Env) labels() map[string]string {
	host, _ := os.Hostname()
	l := map[string]string{
		labelOwner:       ownerValue,
		labelSession:     e.session,
		labelFingerprint: e.fp,
		labelCreatedAt:   time.Now().UTC().Format(time.RFC3339),
		labelIdleTTL:     e.cfg.IdleTTL.D().String(),
		labelPID:         strconv.Itoa(os.Getpid()),
		labelPIDStart:    processStart(os.Getpid()),
		labelHostname:    host,
		labelUID:         strconv.Itoa(os.Getuid()),
		labelReuse:       strconv.FormatBool(e.cfg.ReuseContainer),
	}
	if !e.cfg.ReadOnlyRootfs {
		l[labelLastUse] = lastUseFile
	}
	return l
}

// processStart is the start time of a process in clock ticks since boot (field 22 of
// /proc/PID/stat): with the PID, it names a process even after its PID is reused.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ensureContainer returns a running container with this configuration: the existing one
// (started again if it stopped), or a new one. note says what was done, for Results. Before
// a container starts, its volumes' host directories are checked again (see
// [spec.checkSources]).
func (e *Env) ensureContainer(ctx context.Context) (id, note string, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		info, err := e.inspect(ctx, e.name)
		if cerrdefs.IsNotFound(err) {
			id, err := e.create(ctx)
			if errors.Is(err, errNameTaken) {
				continue // another process created it first: use theirs
			}
			return id, "created container " + e.name, err
		}
		if err != nil {
			return "", "", err
		}
		if info.Config == nil || info.Config.Labels[labelOwner] != ownerValue || info.Config.Labels[labelFingerprint] != e.fp ||
			!e.cfg.ReuseContainer && info.Config.Labels[labelSession] != e.session {
			return "", "", fmt.Errorf("docker: container name %q is taken by a container that was not made by airlock for this configuration; remove it (docker rm -f %[1]s) or set environment.docker.container_name_prefix", e.name)
		}
		if uid := info.Config.Labels[labelUID]; uid != "" && uid != strconv.Itoa(os.Getuid()) {
			// Another user's session, whatever its configuration: not ours to share.
			return "", "", fmt.Errorf("docker: container %q with this configuration belongs to uid %s, not to this user (uid %d); set environment.docker.container_name_prefix to one of your own", e.name, uid, os.Getuid())
		}
		if info.State != nil && info.State.Running && !info.State.Restarting {
			return info.ID, "reused container " + e.name, nil
		}
		err = e.start(ctx, info.ID)
		switch {
		case err == nil:
			return info.ID, fmt.Sprintf("restarted container %s (it was %s)", e.name, info.State.Status), nil
		case errors.Is(err, errVolumeChanged):
			return "", "", err // a new container would mount the same sources
		}
		// It cannot start again (its mounts or runtime changed under it): replace it.
		if err := e.remove(ctx, info.ID); err != nil {
			return "", "", err
		}
	}
	return "", "", fmt.Errorf("docker: container %q keeps changing under us; is another airlock removing it?", e.name)
}

var errNameTaken = errors.New("container name taken")

// create makes and starts a container. One that was created but could not be prepared or
// started is removed at once.
func (e *Env) create(ctx context.Context) (string, error) {
	resp, err := e.createContainer(ctx, e.name)
	switch {
	case cerrdefs.IsConflict(err):
		return "", fmt.Errorf("docker: create %s: %w", e.name, errNameTaken)
	case cerrdefs.IsNotFound(err):
		return "", fmt.Errorf("docker: create %s: image %q is gone from the daemon (%w); load it again", e.name, e.cfg.Image, err)
	case client.IsErrConnectionFailed(err):
		return "", e.unreachable(err)
	case err != nil:
		return "", fmt.Errorf("docker: create %s: %w", e.name, err)
	}
	e.log.Debug("container created", "container", shortID(resp.ID), "name", e.name)
	err = e.prepareRootfs(ctx, resp.ID)
	if err == nil {
		err = e.start(ctx, resp.ID)
	}
	if err != nil {
		return "", errors.Join(err, e.remove(ctx, resp.ID))
	}
	return resp.ID, nil
}

// createContainer creates a container of this configuration named name. The create is not
// cut short by ctx, only bounded by apiTimeout: a create that the daemon carried out after
// this side gave up waiting (a warm pool closing while a member was being made, a busy
// daemon) left a container whose ID no one learnt, and a removal by name could come before it
// existed (TestCreateCutShortLeavesNothing). Once the create has answered, a ctx that ended
// meanwhile removes what it made and is the error.
func (e *Env) createContainer(ctx context.Context, name string) (container.CreateResponse, error) {
	cc, hc := e.spec.engine(e.labels())
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	resp, err := e.cli.ContainerCreate(cctx, cc, hc, nil, nil, name)
	cancel()
	if err == nil && ctx.Err() != nil {
		return container.CreateResponse{}, errors.Join(ctx.Err(), e.remove(ctx, resp.ID))
	}
	return resp, err
}

// prepareRootfs puts the last-use mark into a new container, before it starts.
func (e *Env) prepareRootfs(ctx context.Context, id string) error {
	if e.cfg.ReadOnlyRootfs {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	_ = tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(markDir, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: now})
	_ = tw.WriteHeader(lastUseHeader(e.cfg.User, now))
	if err := tw.Close(); err != nil {
		return fmt.Errorf("docker: tar: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	if err := e.cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("docker: copy last-use mark: %w", err)
	}
	return nil
}

// lastUseHeader is the last-use mark's tar header: owned by the user commands and the helper
// run as, so that the helper may set its times, and writable by that user only. A user given
// by name (which only the image can map to an ID) gets a mark any user may write, as before:
// what it holds is a time, read only by gc.
func lastUseHeader(user string, now time.Time) *tar.Header {
	h := &tar.Header{Name: strings.TrimPrefix(lastUseFile, "/"), Typeflag: tar.TypeReg, Mode: 0o666, ModTime: now}
	u, g, _ := strings.Cut(user, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if g == "" {
		gid, err2 = uid, err1
	}
	if err1 == nil && err2 == nil {
		h.Uid, h.Gid, h.Mode = uid, gid, 0o644
	}
	return h
}

// start starts a created or stopped container, after checking its volumes' host
// directories again, as late as can be (see [spec.checkSources]).
func (e *Env) start(ctx context.Context, id string) error {
	if err := e.spec.checkSources(e.cfg.Host); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	if err := e.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		if client.IsErrConnectionFailed(err) {
			return e.unreachable(err)
		}
		hint := ""
		if e.cfg.Runtime != "" {
			hint = fmt.Sprintf(" (is runtime %q registered with dockerd --add-runtime?)", e.cfg.Runtime)
		}
		return fmt.Errorf("docker: start %s%s: %w", e.name, hint, err)
	}
	return nil
}

func (e *Env) inspect(ctx context.Context, id string) (container.InspectResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	info, err := e.cli.ContainerInspect(ctx, id)
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return info, err
	case client.IsErrConnectionFailed(err):
		return info, e.unreachable(err)
	}
	return info, fmt.Errorf("docker: inspect %s: %w", id, err)
}

// remove force-removes a container; one already gone is not an error. It runs on its own
// deadline even when ctx is cancelled.
func (e *Env) remove(ctx context.Context, id string) error {
	return removeContainer(ctx, e.cli, id)
}

func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove %s: %w", shortID(id), err)
	}
	return nil
}

// GCOptions selects what gc removes.
type GCOptions struct {
	// Host is the daemon address; empty means DOCKER_HOST, then the default socket.
	Host string
	// All removes every airlock container, in use or not.
	All bool
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// MinAge spares containers younger than this that are not running, so that gc does not
	// race a container being created (default one minute).
	MinAge time.Duration
	// Now is the current time (default time.Now()).
	Now time.Time
	// NamePrefix, when set, limits gc to containers whose name starts with it.
	NamePrefix string
	// AllOwners looks at every user's containers. Without it gc keeps to those created by
	// this uid on this host: on a shared daemon, other people's sessions are not ours to end.
	AllOwners bool
}

// GCItem is one container gc looked at and removed (or would remove).
type GCItem struct {
	ID, Name, State string
	// Reason says why it is removable.
	Reason  string
	Removed bool
	Err     error
	// OtherOwner is set, with Reason empty, for a container gc left alone because another
	// user (or another host) created it; see [GCOptions.AllOwners].
	OtherOwner string
}

// GC removes airlock containers that nobody will use again, among those of the calling user
// on this host unless [GCOptions.AllOwners]:
//
//   - not running (Created, Exited, Dead) and older than MinAge: a failed start, a killed
//     container, a daemon restart;
//   - per-session containers whose creating process, on this host, is gone (checked by PID
//     and the process's start time, so a reused PID does not count);
//   - containers idle for longer than their TTL label and with no exec running in them. Idle
//     time is measured from the mtime of the last-use file inside the container (touched by
//     every command), or from the container's start when it has none.
func GC(ctx context.Context, opts GCOptions) ([]GCItem, error) {
	cli, host, err := newClient(opts.Host)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.MinAge == 0 {
		opts.MinAge = time.Minute
	}
	lctx, cancel := context.WithTimeout(ctx, apiTimeout)
	list, err := cli.ContainerList(lctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", labelOwner+"="+ownerValue))})
	cancel()
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return nil, fmt.Errorf("docker: daemon at %s is unreachable: %w", host, err)
		}
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	hostname, _ := os.Hostname()
	me := ownerOf(map[string]string{labelUID: strconv.Itoa(os.Getuid()), labelHostname: hostname})
	var items []GCItem
	for _, c := range list {
		name := strings.TrimPrefix(firstOr(c.Names, c.ID), "/")
		if !strings.HasPrefix(name, opts.NamePrefix) {
			continue
		}
		if owner := ownerOf(c.Labels); !opts.AllOwners && owner != me {
			items = append(items, GCItem{ID: c.ID, Name: name, State: c.State, OtherOwner: owner})
			continue
		}
		reason := gcReason(ctx, cli, c, opts, hostname)
		if reason == "" {
			continue
		}
		it := GCItem{ID: c.ID, Name: name, State: c.State, Reason: reason}
		if !opts.DryRun {
			it.Err = removeContainer(ctx, cli, c.ID)
			it.Removed = it.Err == nil
		}
		items = append(items, it)
	}
	items = append(items, gcNetworks(ctx, cli, opts, hostname)...)
	items = append(items, gcEgressDirs(opts)...)
	return items, nil
}

// ownerOf names who created a container: "uid UID on HOST", or "unknown" for one made
// before containers carried the uid.
func ownerOf(l map[string]string) string {
	uid := l[labelUID]
	if uid == "" {
		return "unknown (no " + labelUID + " label)"
	}
	return "uid " + uid + " on " + l[labelHostname]
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// gcReason says why c may be removed, or "" to keep it.
func gcReason(ctx context.Context, cli *client.Client, c container.Summary, opts GCOptions, hostname string) string {
	if opts.All {
		return "--all"
	}
	l := c.Labels
	created := time.Unix(c.Created, 0)
	if c.State != "running" && opts.Now.Sub(created) >= opts.MinAge {
		return "not running (" + c.State + ")"
	}
	if l[labelReuse] != "true" && l[labelHostname] == hostname {
		if pid, err := strconv.Atoi(l[labelPID]); err == nil && !processAlive(pid, l[labelPIDStart]) {
			return "its session ended (process " + l[labelPID] + " is gone)"
		}
	}
	ttl, err := time.ParseDuration(l[labelIdleTTL])
	if err != nil || ttl <= 0 || c.State != "running" {
		return ""
	}
	ictx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	info, err := cli.ContainerInspect(ictx, c.ID)
	if err != nil || info.State == nil {
		return ""
	}
	for _, execID := range info.ExecIDs {
		if x, err := cli.ContainerExecInspect(ictx, execID); err == nil && x.Running {
			return "" // a helper or a command is running in it: in use
		}
	}
	last, _ := time.Parse(time.RFC3339Nano, info.State.StartedAt)
	if f := l[labelLastUse]; f != "" {
		if st, err := cli.ContainerStatPath(ictx, c.ID, f); err == nil && st.Mtime.After(last) {
			last = st.Mtime
		}
	}
	if idle := opts.Now.Sub(last); idle > ttl {
		return fmt.Sprintf("idle for %s (idle TTL %s)", idle.Round(time.Second), ttl)
	}
	return ""
}

// processAlive reports whether pid runs on this host and, when start is known, is the same
// process that created the container.
func processAlive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return start == "" || processStart(pid) == start
}
