package enginetest

import (
	"fmt"
	"io"
	"testing"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
)

// BenchmarkIterationOverhead times whole core.Run calls with a no-op agent
// (`true`, so every iteration runs) over the plugin protocol, at 1 and 5
// iterations: the difference over 4 is the engine's cost per iteration,
// the 1-iteration time its cost per run (setup, sync, teardown).
//
//	go test -run '^$' -bench . ./core/enginetest
func BenchmarkIterationOverhead(b *testing.B) {
	for _, c := range []struct {
		name    string
		sandbox func(testing.TB) core.ProviderRef
	}{
		{"local", localSandbox},      // isolated: merge-to-head, git bundle sync in and out
		{"bubblewrap", bwrapSandbox}, // bind-mount: head, no worktree
	} {
		for _, iterations := range []int{1, 5} {
			b.Run(fmt.Sprintf("%s/iterations=%d", c.name, iterations), func(b *testing.B) {
				sb := c.sandbox(b)
				repo := newRepo(b)
				o := core.RunOptions{
					Name: "bench", Repo: repo, Sandbox: sb, Agent: commandAgent(b, "true"), Prompt: "nothing to do",
					MaxIterations: iterations,
					Logging:       core.Logging{Terminal: runlog.NewTerminal(io.Discard, io.Discard)},
				}
				for b.Loop() {
					res, err := core.Run(b.Context(), o)
					if err != nil || len(res.Iterations) != iterations {
						b.Fatalf("run: %v", err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
			})
		}
	}
}
