package execute

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

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
