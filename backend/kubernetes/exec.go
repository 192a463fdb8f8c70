package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
)

// Exec runs req through the pod's resident helper, repairing the pod or the helper first
// when either is gone.
func (e *Env) Exec(ctx context.Context, req backend.Request) (backend.Result, error) {
	if err := req.Validate(); err != nil {
		return backend.Result{}, err
	}
	if e.rep.Closed() {
		return backend.Result{}, backend.ErrClosed
	}
	dir, err := backend.WorkDir(e.cfg.Workdir, req.Dir)
	if err != nil {
		return backend.Result{}, err
	}
	timeout, capBytes := req.Effective(e.cfg.DefaultTimeout, e.cfg.MaxOutputBytes)
	env := e.policy.Build(hostEnv(), req.Env)
	notes, err := e.ready(ctx)
	if err != nil {
		return backend.Result{}, err
	}
	e.mu.Lock()
	a, base := e.resident, e.podEnv
	e.mu.Unlock()
	e.touch()
	res, err := a.client.Exec(ctx, helper.Request{
		Argv: req.Argv, Command: req.Command, Dir: dir, Workspace: e.cfg.Workdir,
		Env: helper.MergeEnv(base, env), Stdin: req.Stdin, Timeout: timeout,
		KillGrace: e.cfg.KillGrace, MaxOutputBytes: capBytes,
		Stdout: req.Stdout, Stderr: req.Stderr, EgressTunnel: e.callEgress(ctx),
	})
	if errors.Is(err, backend.ErrUnavailable) && !errors.Is(err, backend.ErrClosed) {
		said := ""
		if msg := strings.TrimSpace(string(a.stderr.Bytes())); msg != "" {
			said = " (it said: " + msg + ")"
		}
		return backend.Result{}, fmt.Errorf("kubernetes: the helper in pod %s stopped while the command ran%s; the environment is repaired on the next call: %w", e.name, said, err)
	}
	if err != nil {
		return backend.Result{}, err
	}
	res.Notes = append(notes, res.Notes...)
	return res, nil
}

// ready returns the notes owed to the next Result, repairing the environment first when the
// helper's stream has ended (the pod deleted, evicted or its node lost, the API server
// restarted).
func (e *Env) ready(ctx context.Context) ([]string, error) {
	return e.rep.Ready(ctx, func() (bool, string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.resident != nil && e.resident.alive() {
			return true, ""
		}
		var c *helper.Client
		if e.resident != nil {
			c = e.resident.client
		}
		return false, helper.Why(c, "the resident helper's stream ended")
	})
}

// mended reports whether another call's repair brought the helper back while this one
// waited for it (see [backend.Repairer]).
func (e *Env) mended() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resident != nil && e.resident.alive()
}

// logName names the pod in the log.
func (e *Env) logName() string { return "pod " + e.name }

// prepare makes sure the pod runs with the helper in it. A pod that is gone or ended is
// replaced and the notes say so; a helper whose stream broke while its pod still runs (an
// API-server restart) is started again in the same pod.
func (e *Env) prepare(ctx context.Context, why string) ([]string, error) {
	e.mu.Lock()
	old, oldUID := e.resident, e.podUID
	e.resident = nil
	e.mu.Unlock()
	if old != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		old.close(cctx)
		cancel()
	}
	start := time.Now()
	p, note, err := e.ensurePod(ctx)
	if err != nil {
		return nil, err
	}
	e.log.Debug("pod ready", "pod", e.name, "how", note, "duration_ms", time.Since(start).Milliseconds())
	e.mu.Lock()
	e.podUID, e.node = p.UID, p.Spec.NodeName
	e.mu.Unlock()
	var notes []string
	switch {
	case oldUID != "" && p.UID != oldUID:
		notes = append(notes, "environment recreated: "+why+"; pod "+e.name+" was gone or had ended, "+note+" ("+e.workspaceFate()+")")
	case why != "":
		notes = append(notes, "restarted the resident helper: "+why)
	}
	if err := e.checkNetwork(ctx, p.Name); err != nil {
		return nil, errors.Join(err, e.deletePod(context.WithoutCancel(ctx), p.UID, false))
	}
	a, penv, err := e.startHelper(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: pod %s/%s: %w", e.cl.namespace, e.name, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rep.Closed() {
		e.resident = a // Close, waiting for this repair, stops it
		return nil, backend.ErrClosed
	}
	e.resident, e.podEnv = a, penv
	return notes, nil
}

// touch brings the pod's last-use annotation up to date, at most once a minute and in the
// background: gc measures idle time from it.
func (e *Env) touch() {
	e.mu.Lock()
	if time.Since(e.lastTouch) < touchEvery || e.podUID == "" {
		e.mu.Unlock()
		return
	}
	e.lastTouch = time.Now()
	e.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(e.rep.Life(), apiTimeout)
		defer cancel()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annLastUse, time.Now().UTC().Format(time.RFC3339))
		_, err := e.cl.pods().Patch(ctx, e.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			e.log.Debug("last-use annotation not updated", "error", err)
		}
	}()
}

// isUnreachable reports whether err means the API server did not answer.
func isUnreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || apierrors.IsServerTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err)
}

func quantityValue(s string) int64 {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0
	}
	return q.Value()
}

func quantityMilli(s string) int64 {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0
	}
	return q.MilliValue()
}
