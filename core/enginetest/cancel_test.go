package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core"
)

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// withMarker lists the live processes whose command line contains marker.
func withMarker(marker string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && pid != os.Getpid() && strings.Contains(string(cmd), marker) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// eventually polls cond for up to 10 s (processes being killed take a
// moment to be reaped).
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestCancel cancels the run's context while the agent runs: the agent's
// processes die, the work is kept, and the error means exit code 130.
func TestCancel(t *testing.T) {
	t.Parallel()
	for _, c := range bothSandboxes {
		t.Run(c.name, func(t *testing.T) {
			sb := c.sandbox(t)
			repo := newRepo(t)
			// The agent's shell writes its pid ($$, a host pid in the local
			// sandbox; bubblewrap has a pid namespace and a private /tmp).
			pidFile := filepath.Join(t.TempDir(), "agent.pid")
			if c.name != "Local" {
				pidFile = "agent.pid"
			}
			// A sleep with a unique duration marks the agent's child process.
			marker := fmt.Sprintf("sleep 600.%09d", rand.IntN(1e9))
			agent := commitScript("done.txt") + " && echo wip > wip.txt && echo $$ > " + pidFile +
				" && echo ready && " + marker + " && echo survived > survived.txt"
			var term buffer
			o := options(repo, sb, commandAgent(t, agent), &term)
			o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/cancel"}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			o.OnEvent = func(e core.AgentEvent) {
				if e.Event.Text == "ready" {
					cancel()
				}
			}
			res, err := core.Run(ctx, o)
			if err == nil {
				t.Fatal("Run succeeded after cancellation")
			}
			if code := exitCode(err); code != exitCancelled || !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v (exit code %d); want the cancellation, exit code 130", err, code)
			}
			if !eventually(func() bool { return len(withMarker(marker)) == 0 }) {
				t.Errorf("agent processes still running: %v", withMarker(marker))
			}
			if c.name == "Local" {
				b, rerr := os.ReadFile(pidFile)
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if rerr != nil || pid == 0 {
					t.Fatalf("agent pid file: %v %q", rerr, b)
				}
				if !eventually(func() bool { return !alive(pid) }) {
					t.Errorf("agent process %d still alive", pid)
				}
			}
			if len(res.Commits) != 1 || len(revList(t, repo, "main..agent/cancel")) != 1 {
				t.Errorf("commits %v; want the agent's commit on agent/cancel", res.Commits)
			}
			if c.name == "Local" {
				if b, _ := os.ReadFile(res.PatchPath); !strings.Contains(string(b), "wip.txt") {
					t.Errorf("uncommitted work not saved to a patch (%q)", res.PatchPath)
				}
			} else {
				if res.PreservedWorktreePath == "" || !exists(filepath.Join(res.PreservedWorktreePath, "wip.txt")) {
					t.Errorf("uncommitted work not in a preserved worktree (%q)", res.PreservedWorktreePath)
				}
				if exists(filepath.Join(res.PreservedWorktreePath, "survived.txt")) {
					t.Errorf("the agent went on after the cancellation")
				}
			}
			assertClean(t, repo)

			// What next is true: a rerun does not apply a patch; it does
			// continue from the preserved worktree, and says so first.
			if c.name == "Local" {
				if !strings.Contains(err.Error(), "a rerun does not apply the saved patch: apply it where you want the work (git apply "+res.PatchPath) {
					t.Errorf("the error's next step does not say what to do with the patch:\n%v", err)
				}
				return
			}
			if !strings.Contains(err.Error(), "next: nothing was lost (see above); run again to continue from the preserved worktree's uncommitted changes") {
				t.Errorf("the error's next step does not say the rerun continues from the worktree:\n%v", err)
			}
			var term2 buffer
			o2 := options(repo, sb, commandAgent(t, "git add -A && git -c user.name=a -c user.email=a@example.com commit -qm wip"), &term2)
			o2.BranchStrategy = o.BranchStrategy
			res2, err := core.Run(t.Context(), o2)
			if err != nil || len(res2.Commits) != 1 || res2.PreservedWorktreePath != "" {
				t.Fatalf("the rerun did not continue from the preserved worktree: %v %+v", err, res2)
			}
			if !strings.Contains(term2.String(), "warning: continuing from the worktree "+res.PreservedWorktreePath) {
				t.Errorf("the rerun did not say it continues from the preserved worktree:\n%s", term2.String())
			}
		})
	}
}

// TestCancelDuringHooks: cancelling while a hook runs kills it, host or
// sandbox side, and nothing after it runs.
func TestCancelDuringHooks(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"host", "sandbox"} {
		t.Run(where, func(t *testing.T) {
			repo := newRepo(t)
			marker := fmt.Sprintf("sleep 600.%09d", rand.IntN(1e9))
			var term buffer
			o := options(repo, localSandbox(t), commandAgent(t, "touch "+filepath.Join(repo, "agent-ran")), &term)
			h := []core.Hook{{Command: marker}}
			if where == "host" {
				o.Hooks.HostOnWorktreeReady = h
			} else {
				o.Hooks.SandboxOnSandboxReady = h
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				// However slow the machine, cancel only once the hook runs.
				for len(withMarker(marker)) == 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
				cancel()
			}()
			_, err := core.Run(ctx, o)
			var re *core.RunError
			if !asError(err, &re) || re.Phase != core.PhaseHooks || exitCode(err) != exitCancelled {
				t.Fatalf("err = %v; want a cancellation during hooks", err)
			}
			if !eventually(func() bool { return len(withMarker(marker)) == 0 }) {
				t.Errorf("hook processes still running: %v", withMarker(marker))
			}
			if exists(filepath.Join(repo, "agent-ran")) {
				t.Errorf("the agent ran after the cancellation")
			}
			assertClean(t, repo)
		})
	}
}
