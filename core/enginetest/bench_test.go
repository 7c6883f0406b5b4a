package enginetest

import (
	"io"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
)

// BenchmarkIterationOverhead times whole core.Run calls with a no-op agent
// (`true`: no signal, so every iteration runs) over the plugin protocol.
// Each op is one run of 1 iteration and one of 5, back to back so that
// load on the machine hits both alike. Reported:
//
//	run-ms   a 1-iteration run: the engine's cost per run (checks, setup,
//	         one iteration, sync, teardown)
//	iter-ms  (5-iteration run - 1-iteration run) / 4: the cost of one more
//	         iteration in the same sandbox
//
//	go test -run '^$' -bench . ./core/enginetest
func BenchmarkIterationOverhead(b *testing.B) {
	for _, c := range []struct {
		name    string
		sandbox func(testing.TB) core.SandboxRef
	}{
		{"local", localSandbox},      // isolated: merge-to-head, git bundle sync in and out
		{"bubblewrap", bwrapSandbox}, // bind-mount: head, no worktree
	} {
		b.Run(c.name, func(b *testing.B) {
			sb := c.sandbox(b)
			repo := newRepo(b)
			agent := commandAgent(b, "true")
			timed := func(iterations int) time.Duration {
				start := time.Now()
				res, err := core.Run(b.Context(), core.RunOptions{
					Name: "bench", Repo: repo, Sandbox: sb, Agent: agent, Prompt: "nothing to do",
					MaxIterations: iterations,
					Logging:       core.Logging{Terminal: runlog.NewTerminal(io.Discard, io.Discard)},
				})
				if err != nil || len(res.Iterations) != iterations {
					b.Fatalf("run: %v", err)
				}
				return time.Since(start)
			}
			var one, five time.Duration
			for b.Loop() {
				one += timed(1)
				five += timed(5)
			}
			n := float64(b.N)
			b.ReportMetric(float64(one.Microseconds())/1000/n, "run-ms")
			b.ReportMetric(float64((five-one).Microseconds())/1000/4/n, "iter-ms")
		})
	}
}
