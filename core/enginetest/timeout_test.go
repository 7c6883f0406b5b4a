package enginetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core"
)

// TestFakeIdleTimeout: an agent that goes silent is stopped, the run fails
// with an idle-timeout error and its work is kept. The agent says it is
// working until its work is done, so a slow machine cannot make it look
// idle earlier.
func TestFakeIdleTimeout(t *testing.T) {
	t.Parallel()
	for _, c := range bothSandboxes {
		t.Run(c.name, func(t *testing.T) {
			sb := c.sandbox(t)
			repo := newRepo(t)
			var term buffer
			heartbeat := "( while [ ! -e wip.txt ]; do echo 'TEXT working'; sleep 0.1; done ) & "
			o := options(repo, sb, fake(t, script(heartbeat+commitScript("done.txt")+" && echo wip > wip.txt && echo 'TEXT thinking' && sleep 30")), &term)
			o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/idle"}
			o.IdleTimeout = time.Second
			res, err := core.Run(t.Context(), o)
			var idle *core.IdleTimeoutError
			if !asError(err, &idle) {
				t.Fatalf("err = %v; want an idle-timeout error", err)
			}
			if exitCode(err) != exitFailure {
				t.Errorf("exit code %d", exitCode(err))
			}
			// The commit stays on the branch, the uncommitted work in a
			// preserved worktree (bind-mount) or a patch (isolated).
			if len(res.Commits) != 1 || len(revList(t, repo, "main..agent/idle")) != 1 {
				t.Errorf("commits %v; want the agent's one commit on agent/idle", res.Commits)
			}
			keptIn := res.PreservedWorktreePath
			if c.name == "Local" {
				keptIn = res.PatchPath
			}
			if keptIn == "" {
				t.Fatalf("uncommitted work not kept: result %+v", res)
			}
			if !strings.Contains(err.Error(), keptIn) {
				t.Errorf("the error does not say where the work is (%s):\n%v", keptIn, err)
			}
			if c.name == "Local" {
				if b, _ := os.ReadFile(keptIn); !strings.Contains(string(b), "wip.txt") {
					t.Errorf("patch %s lacks wip.txt:\n%s", keptIn, b)
				}
			} else if !exists(filepath.Join(keptIn, "wip.txt")) {
				t.Errorf("preserved worktree %s lacks wip.txt", keptIn)
			}
		})
	}
}

// TestFakeCompletionTimeout: an agent that hangs after the signal is
// stopped and the iteration succeeds with a warning.
func TestFakeCompletionTimeout(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, script(commitScript("x.txt")+" && echo 'TEXT "+signal+"' && sleep 30")), &term)
	o.MaxIterations = 3
	o.CompletionTimeout = 300 * time.Millisecond
	res := run(t, o)
	if res.CompletionSignal != signal || len(res.Iterations) != 1 || len(res.Commits) != 1 {
		t.Errorf("signal %q, %d iterations, %d commits", res.CompletionSignal, len(res.Iterations), len(res.Commits))
	}
	if !strings.Contains(term.String(), "warning: completion signal seen but the agent process kept running") {
		t.Errorf("no warning on the terminal:\n%s", term.String())
	}
}
