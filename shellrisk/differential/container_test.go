package differential

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// Shells are the names the driver reports, in the order it runs them (see probe).
var Shells = []string{"bash", "bash-sh", "dash", "busybox"}

// entry, request and result mirror the probe's wire types.
type entry struct {
	Exe  []byte   `json:"exe"`
	Argv [][]byte `json:"argv"`
}

type request struct {
	ID     int      `json:"id"`
	Cmd    []byte   `json:"cmd"`
	Shells []string `json:"shells,omitempty"`
}

type result struct {
	ID        int      `json:"id"`
	Shell     string   `json:"shell"`
	Dir       string   `json:"dir"`
	Home      string   `json:"home"`
	Runs      []entry  `json:"runs"`
	Missing   [][]byte `json:"missing"`
	Exit      int      `json:"exit"`
	TimedOut  bool     `json:"timed_out"`
	Truncated bool     `json:"truncated"`
	Stderr    []byte   `json:"stderr"`
	Error     string   `json:"error"`
	Effects   []effect `json:"effects"`
}

// labelRun names the test process that made a container, so that a crashed run's leftovers
// are found by label and removed by the next run (see removeStale).
const (
	labelRun     = "airlock.test.differential.run"
	labelCreated = "airlock.test.differential.created"
	staleAfter   = time.Hour
)

// sandbox is one throwaway container with the driver running in it: commands go in as
// JSON lines, results come back as JSON lines, many commands per container.
type sandbox struct {
	mu      sync.Mutex // serialises Run
	hij     io.WriteCloser
	enc     *json.Encoder
	results chan result
	readErr chan error
	nextID  int
	shells  []string
}

// startSandbox starts one container for the calling test and its driver; both go away in
// t.Cleanup. workers is how many commands the driver runs at once.
func startSandbox(t testing.TB, workers int) *sandbox {
	t.Helper()
	cli := dockertest.Client(t)
	names := recorderNames(t, append(busyboxApplets(t), classifierPrograms()...))
	ref := shellImage(t, cli, names)
	return startContainer(t, cli, containerSpec{image: ref, workers: workers})
}

// containerSpec is what differs between the harness's two containers: the recorders'
// (every program a recorder) and the effects one (real programs: see effects_test.go).
type containerSpec struct {
	image   string
	workers int
	mounts  []mount.Mount
	tmpfs   map[string]string // beyond /tmp and /rec
	mode    string            // the driver's third argument, if any
	shells  []string          // the shells the driver runs, in its order; default Shells
}

// startContainer starts one container from spec and its driver; both go away in
// t.Cleanup.
func startContainer(t testing.TB, cli *client.Client, spec containerSpec) *sandbox {
	t.Helper()
	removeStale(cli)
	workers, ref := spec.workers, spec.image
	tmpfs := map[string]string{
		"/tmp": "rw,nosuid,nodev,size=128m,mode=1777",
		"/rec": "rw,nosuid,nodev,size=32m,mode=1777",
	}
	maps.Copy(tmpfs, spec.tmpfs)
	driverArgs := []string{"/.probe/driver", strconv.Itoa(workers), strconv.Itoa(baseUID())}
	if spec.mode != "" {
		driverArgs = append(driverArgs, spec.mode)
	}

	ctx := context.Background()
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name := "airlock-diff-" + hex.EncodeToString(suffix[:])
	pids := int64(512)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := cli.ContainerCreate(cctx, &container.Config{
		Image:      ref,
		Cmd:        []string{"/.probe/idle"},
		User:       "0:0",
		WorkingDir: "/tmp",
		Env:        []string{"PATH=" + imagePATH},
		Labels: map[string]string{
			labelOwner:   ownerValue,
			labelRun:     name,
			labelCreated: strconv.FormatInt(time.Now().Unix(), 10),
		},
	}, &container.HostConfig{
		NetworkMode: "none",
		CapDrop:     []string{"ALL"},
		// For the driver alone: it makes each run's directory, starts the shell as that
		// worker's user (which leaves the shell with no capability at all), kills what is
		// left of the run and removes its files.
		CapAdd:         []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETUID", "SETGID"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Tmpfs:          tmpfs,
		Mounts:         spec.mounts,
		Resources:      container.Resources{PidsLimit: &pids, Memory: 1 << 30},
	}, nil, nil, name)
	t.Cleanup(func() {
		if err != nil {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := cli.ContainerRemove(rctx, resp.ID, container.RemoveOptions{Force: true}); rerr != nil {
			t.Logf("remove %s: %v", name, rerr)
		}
	})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if err := cli.ContainerStart(cctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	x, err := cli.ContainerExecCreate(cctx, resp.ID, container.ExecOptions{
		Cmd:          driverArgs,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		t.Fatalf("exec create driver: %v", err)
	}
	hij, err := cli.ContainerExecAttach(cctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("exec attach driver: %v", err)
	}
	t.Cleanup(hij.Close)
	s := &sandbox{hij: hij.Conn, enc: json.NewEncoder(hij.Conn), results: make(chan result, 64), readErr: make(chan error, 1), shells: spec.shells}
	if s.shells == nil {
		s.shells = Shells
	}
	pr, pw := io.Pipe()
	var stderr capture
	go func() {
		_, err := stdcopy.StdCopy(pw, &stderr, hij.Reader)
		_ = pw.CloseWithError(errors.Join(err, fmt.Errorf("driver stream ended; driver stderr: %s", stderr.String())))
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for sc.Scan() {
			var r result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				s.readErr <- fmt.Errorf("driver result: %w", err)
				return
			}
			s.results <- r
		}
		s.readErr <- errors.Join(sc.Err(), fmt.Errorf("driver stream ended; driver stderr: %s", stderr.String()))
	}()
	return s
}

// Run runs each command under every shell and returns, per command, the results in
// the order of the sandbox's shells ([Shells] for the recorders' container).
func (s *sandbox) Run(cmds [][]byte) ([][]result, error) {
	return s.RunOn(cmds, nil)
}

// RunOn is Run with, for each command, the shells to run it under (all when nil); a
// shell left out has a zero result.
func (s *sandbox) RunOn(cmds [][]byte, shells [][]string) ([][]result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base := s.nextID
	s.nextID += len(cmds)
	sendErr := make(chan error, 1)
	go func() {
		for i, c := range cmds {
			req := request{ID: base + i, Cmd: c}
			if shells != nil {
				req.Shells = shells[i]
			}
			if err := s.enc.Encode(req); err != nil {
				sendErr <- fmt.Errorf("send to driver: %w", err)
				return
			}
		}
		sendErr <- nil
	}()
	out := make([][]result, len(cmds))
	order := map[string]int{}
	for i, sh := range s.shells {
		order[sh] = i
	}
	want := 0
	for i := range cmds {
		if shells != nil && len(shells[i]) > 0 {
			want += len(shells[i])
		} else {
			want += len(s.shells)
		}
	}
	for range want {
		select {
		case r := <-s.results:
			i := r.ID - base
			if i < 0 || i >= len(cmds) {
				return nil, fmt.Errorf("driver answered unknown id %d", r.ID)
			}
			if out[i] == nil {
				out[i] = make([]result, len(s.shells))
			}
			k, ok := order[r.Shell]
			if !ok {
				return nil, fmt.Errorf("driver answered for unknown shell %q", r.Shell)
			}
			out[i][k] = r
		case err := <-s.readErr:
			s.readErr <- err
			return nil, err
		case <-time.After(2 * time.Minute):
			return nil, errors.New("driver answered nothing for 2 minutes")
		}
	}
	if err := <-sendErr; err != nil {
		return nil, err
	}
	return out, nil
}

// baseUID picks the first of the users the driver runs shells as: RLIMIT_NPROC counts a
// user's processes on the whole host, so two sandboxes (two fuzz workers, two helpers on
// one daemon) must not share one.
func baseUID() int {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return 200000 + int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16)%1000000*64
}

// removeStale removes this harness's containers that a crashed run left behind: only ours
// (by label), and only old ones, since other test processes may be using theirs.
func removeStale(cli *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labelOwner+"="+ownerValue))})
	if err != nil {
		return
	}
	for _, c := range list {
		created, err := strconv.ParseInt(c.Labels[labelCreated], 10, 64)
		if err != nil || time.Since(time.Unix(created, 0)) < staleAfter {
			continue
		}
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	}
}

// capture keeps what the driver writes to stderr, for error messages.
type capture struct {
	mu  sync.Mutex
	buf []byte
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) < 64<<10 {
		c.buf = append(c.buf, p...)
	}
	return len(p), nil
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}
