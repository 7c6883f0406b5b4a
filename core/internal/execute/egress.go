package execute

import (
	"context"
	"fmt"
	"time"

	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/sdk"
)

// egressWatch follows a sandbox's egress refusals while it lives.
type egressWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	counts map[string]int // refusals per target; the watch's goroutine's until done
}

// watchEgress reports each refusal of the sandbox's egress policy as a
// warning in the run's log, to OnEgressDenied and in the result's count,
// until stopEgress. A sandbox without a policy is not watched.
func (r *runner) watchEgress(ctx context.Context, sb sdk.Sandbox) {
	ew, ok := sb.(sdk.EgressWatcher)
	if r.Egress == nil || !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &egressWatch{cancel: cancel, done: make(chan struct{}), counts: map[string]int{}}
	r.egress = w
	go func() {
		defer close(w.done)
		err := ew.WatchEgress(ctx, func(d sdk.EgressDenial) {
			d.Host, d.Reason = r.Redact.String(d.Host), r.Redact.String(d.Reason)
			t := egressTarget(d)
			w.counts[t]++
			r.egressDenied(d, t, w.counts[t] == 1)
		})
		if err != nil && ctx.Err() == nil && !pluginDied(err) {
			r.progress.Warn("egress refusals are no longer reported: %v", r.Redact.Error(err))
		}
	}()
}

// stopEgress ends the watch and adds its refusals to the result. Once the
// sandbox is closed, the watch ends by itself after the last refusal
// (within tctx); otherwise it is cut off.
func (r *runner) stopEgress(tctx context.Context, closed bool) {
	w := r.egress
	if w == nil {
		return
	}
	r.egress = nil
	if closed {
		select {
		case <-w.done:
		case <-tctx.Done():
		}
	}
	w.cancel()
	<-w.done
	r.res.AddEgressCounts(w.counts)
}

// egressDenied shows one refusal, its secrets hidden: every one to
// OnEgressDenied, the first of each target in the log (the summary counts
// the rest).
func (r *runner) egressDenied(d sdk.EgressDenial, target string, first bool) {
	if first {
		r.progress.Warn("egress denied: %s (%s)", target, d.Reason)
	} else {
		r.log.Debug("egress denied again", "target", target)
	}
	if r.OnEgressDenied == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			r.log.Warn("egress observer panicked; report dropped", "panic", v)
		}
	}()
	r.OnEgressDenied(run.EgressDenied{Run: r.Name, Time: time.Now(), EgressDenial: d})
}

// egressTarget is "host:port", "host (dns)" for a name lookup, and names
// a protocol other than TCP.
func egressTarget(d sdk.EgressDenial) string {
	switch {
	case d.Port == 0:
		return d.Host + " (" + d.Proto + ")"
	case d.Proto != "" && d.Proto != "tcp":
		return fmt.Sprintf("%s:%d/%s", d.Host, d.Port, d.Proto)
	}
	return fmt.Sprintf("%s:%d", d.Host, d.Port)
}
