package execute

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A step that reports waiting (a provider's queue) for longer than its
// timeout is not timed out for it; the clock runs again from its next
// report, and a step that never reports waiting times out as before, as a
// timeout and not as a cancellation of the run.
func TestWithinPausableStopsTheClockWhileWaiting(t *testing.T) {
	const d = 200 * time.Millisecond
	err := withinPausable(context.Background(), "create_sandbox", d, func(ctx context.Context, pause func(bool)) error {
		pause(true)
		select { // three timeouts in the queue
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(3 * d):
		}
		pause(false)
		return nil
	})
	if err != nil {
		t.Fatalf("a step that waited in a queue: %v", err)
	}

	err = withinPausable(context.Background(), "create_sandbox", d, func(ctx context.Context, pause func(bool)) error {
		pause(true)
		pause(false)
		<-ctx.Done()
		return ctx.Err()
	})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Step != "create_sandbox" || errors.Is(err, context.Canceled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a step stuck after the queue: %v, want a create_sandbox timeout", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = withinPausable(ctx, "create_sandbox", d, func(ctx context.Context, pause func(bool)) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || errors.As(err, &te) {
		t.Fatalf("a cancelled run: %v, want its cancellation", err)
	}
}
