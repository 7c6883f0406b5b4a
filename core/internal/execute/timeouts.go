package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Timeouts bound the lifecycle steps of a run; zero values take the
// defaults (DefaultTimeouts).
type Timeouts struct {
	// Worktree: preparing the branch and the worktree.
	Worktree time.Duration
	// CreateSandbox: the sandbox provider's Create.
	CreateSandbox time.Duration
	// Hooks: each hook without a timeout of its own.
	Hooks time.Duration
	// SyncIn and SyncOut: the git bundles into and out of an isolated
	// sandbox.
	SyncIn  time.Duration
	SyncOut time.Duration
	// Merge: merge-to-head's merge into the target branch.
	Merge time.Duration
	// Copy: copy_to_worktree's copy (into the worktree or the sandbox).
	Copy time.Duration
}

// MarshalJSON writes each timeout as a duration string ("5m0s").
func (t Timeouts) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{
		"worktree": t.Worktree.String(), "create_sandbox": t.CreateSandbox.String(), "hooks": t.Hooks.String(),
		"sync_in": t.SyncIn.String(), "sync_out": t.SyncOut.String(), "merge": t.Merge.String(), "copy": t.Copy.String(),
	})
}

// DefaultTimeouts are the lifecycle timeouts of a run that sets none.
var DefaultTimeouts = Timeouts{
	Worktree: 2 * time.Minute, CreateSandbox: 5 * time.Minute,
	Hooks: 60 * time.Second, SyncIn: 5 * time.Minute, SyncOut: 5 * time.Minute, Merge: 2 * time.Minute,
	Copy: 10 * time.Minute,
}

// WithDefaults returns t with its zero values set to the defaults.
func (t Timeouts) WithDefaults() Timeouts {
	d := DefaultTimeouts
	for _, p := range []struct{ v, def *time.Duration }{
		{&t.Worktree, &d.Worktree}, {&t.CreateSandbox, &d.CreateSandbox},
		{&t.Hooks, &d.Hooks}, {&t.SyncIn, &d.SyncIn}, {&t.SyncOut, &d.SyncOut}, {&t.Merge, &d.Merge}, {&t.Copy, &d.Copy},
	} {
		if *p.v == 0 {
			*p.v = *p.def
		}
	}
	return t
}

// TimeoutError is a lifecycle step that took longer than its timeout.
type TimeoutError struct {
	Step    string // the timeouts attribute, e.g. "create_sandbox"
	Timeout time.Duration
	Err     error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%v: timed out after %s (timeouts { %s = ... } raises it)", e.Err, e.Timeout, e.Step)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// within runs f with ctx bounded by d (unbounded when d is not positive); a failure because d passed (not
// because ctx ended) is a *TimeoutError naming step.
func within(ctx context.Context, step string, d time.Duration, f func(context.Context) error) error {
	if d <= 0 {
		return f(ctx)
	}
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := f(sctx)
	// The deadline, not sctx.Err(): a plugin gets it over gRPC and may
	// report it a moment before sctx's own timer fires.
	dl, _ := sctx.Deadline()
	if err != nil && ctx.Err() == nil && !time.Now().Before(dl) {
		return &TimeoutError{Step: step, Timeout: d, Err: err}
	}
	return err
}

// withinPausable is within for a step that may wait on something outside
// the run (a provider's queue): its clock stops while f reports waiting
// (pause(true)) and runs on from its next report (pause(false)).
func withinPausable(ctx context.Context, step string, d time.Duration, f func(ctx context.Context, pause func(waiting bool)) error) error {
	if d <= 0 {
		return f(ctx, func(bool) {})
	}
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	expired, paused := false, false
	left, since := d, time.Now()
	timer := time.AfterFunc(d, func() {
		mu.Lock()
		expired = true
		mu.Unlock()
		cancel(context.DeadlineExceeded)
	})
	defer timer.Stop()
	err := f(sctx, func(waiting bool) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case expired || waiting == paused:
		case waiting:
			if timer.Stop() { // else it is firing: the timeout wins
				left -= time.Since(since)
				paused = true
			}
		default:
			since, paused = time.Now(), false
			timer.Reset(left)
		}
	})
	mu.Lock()
	timedOut := expired
	mu.Unlock()
	if err != nil && ctx.Err() == nil && timedOut {
		if errors.Is(err, context.Canceled) { // how the cancel reached f: not a cancellation of the run
			err = context.DeadlineExceeded
		}
		return &TimeoutError{Step: step, Timeout: d, Err: err}
	}
	return err
}
