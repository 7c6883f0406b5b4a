package enginetest

import (
	"io"
	"testing"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
)

func TestZZBw(t *testing.T) {
	sb := bwrapSandbox(t)
	repo := newRepo(t)
	ag := commandAgent(t, "true")
	bad := 0
	for r := 0; r < 100; r++ {
		o := core.RunOptions{Name: "bench", Repo: repo, Sandbox: sb, Agent: ag, Prompt: "x", MaxIterations: 5,
			Logging: core.Logging{Terminal: runlog.NewTerminal(io.Discard, io.Discard)}}
		_, err := core.Run(t.Context(), o)
		if err != nil {
			bad++
			t.Log(r, err)
		}
	}
	t.Log("bad", bad)
}
