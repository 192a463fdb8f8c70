package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.StartBaseliner = (*Env)(nil)

// StartBaseline times what opening a session stands in for, without Airlock: a pod of this
// environment's spec (image, limits, hardening) created through the API with the same
// client, polled until it runs (the same schedule as a session's pod), then one exec of true
// in it. No helper is installed and nothing is checked. Reset deletes the pods, untimed, as
// a session's close is not timed either; they carry the owner label and annotations of the
// environment's own pods, so gc finds any a killed bench leaves.
func (e *Env) StartBaseline(ctx context.Context) (*backend.Baseline, error) {
	var mu sync.Mutex
	var made []string
	pods := e.cl.pods()
	reset := func(ctx context.Context) error {
		mu.Lock()
		names := made
		made = nil
		mu.Unlock()
		var errs []error
		for _, n := range names {
			err := pods.Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	run := func(ctx context.Context) error {
		p := e.podObject()
		p.Name = "airlock-raw-" + newID()
		p.Labels[labelPod], p.Labels[labelSession] = p.Name, "raw"
		delete(p.Labels, labelPool)
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod: %w", err)
		}
		mu.Lock()
		made = append(made, p.Name)
		mu.Unlock()
		if err := e.pollRunning(ctx, p.Name); err != nil {
			return err
		}
		res, err := e.rawExec(ctx, p.Name, []string{"true"}, nil)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		if err != nil {
			return fmt.Errorf("exec true in %s: %w", p.Name, err)
		}
		return nil
	}
	return &backend.Baseline{
		Name:  "pod create + poll until running + exec true (API, same spec, no helper)",
		Run:   run,
		Reset: reset,
		Close: func() { _ = reset(context.Background()) },
	}, nil
}

// pollRunning polls pod name as waitRunning does, until it runs or ctx ends.
func (e *Env) pollRunning(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.PodStartTimeout.D())
	defer cancel()
	delay := 50 * time.Millisecond
	for {
		p, err := e.cl.pods().Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && containerRunning(p) {
			return nil
		}
		if err == nil {
			if why := podFailure(p); why != "" {
				return fmt.Errorf("pod %s: %s", name, why)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pod %s did not run: %w", name, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}
