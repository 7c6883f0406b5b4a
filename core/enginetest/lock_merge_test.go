package enginetest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/worktree"
)

// TestLockContention: a second run on a branch a live run holds fails
// fast, naming the holder; the first run is unaffected.
func TestLockContention(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	sb, agent := localSandbox(t), commandAgent(t, "true")
	goFile := filepath.Join(t.TempDir(), "go")
	strategy := core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/shared"}

	var term1 buffer
	first := options(repo, sb, fakeAgentRef(t, "echo ready; while [ ! -e "+goFile+" ]; do sleep 0.05; done; "+commitScript("first.txt")), &term1)
	first.Name, first.BranchStrategy = "first", strategy
	ready := make(chan struct{})
	first.OnEvent = func(e core.AgentEvent) {
		if e.Event.Text == "ready" {
			close(ready)
		}
	}
	type outcome struct {
		res *core.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := core.Run(t.Context(), first)
		done <- outcome{res, err}
	}()
	select {
	case <-ready:
	case o := <-done:
		t.Fatalf("first run ended early: %v", o.err)
	}

	var term2 buffer
	second := options(repo, sb, agent, &term2)
	second.Name, second.BranchStrategy = "second", strategy
	_, err := core.Run(t.Context(), second)
	var locked *worktree.LockedError
	if !asError(err, &locked) {
		t.Fatalf("second run: err = %v; want a lock error", err)
	}
	msg := err.Error()
	if locked.Holder.Run != "first" || locked.Holder.PID != os.Getpid() ||
		!strings.Contains(msg, "first") || !strings.Contains(msg, fmt.Sprint(os.Getpid())) {
		t.Errorf("the error does not name the holder (run first, pid %d): %+v\n%s", os.Getpid(), locked.Holder, msg)
	}
	if exitCode(err) != exitFailure {
		t.Errorf("exit code %d", exitCode(err))
	}

	write(t, goFile, "")
	o := <-done
	if o.err != nil {
		t.Fatalf("first run: %v", o.err)
	}
	if len(o.res.Commits) != 1 || len(revList(t, repo, "main..agent/shared")) != 1 {
		t.Errorf("first run's commits %v", o.res.Commits)
	}
	// Released: the branch is free again.
	third := options(repo, sb, agent, &term2)
	third.BranchStrategy = strategy
	run(t, third)
}

// fakeAgentRef is the fake agent running s.
func fakeAgentRef(t testing.TB, s string) core.AgentRef { return fake(t, script(s)) }

// TestMergeConflict: a merge-to-head whose branch conflicts with the host
// leaves the host repo clean, keeps the temporary branch and says how to
// finish.
func TestMergeConflict(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	hostTip := ""
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, "echo agent > README && git commit -q -am 'agent edit' && echo '"+signal+"'"), &term)
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyMergeToHead}
	// The host branch moves on with a conflicting change once the run's
	// temporary branch exists (the hook runs in the host repo).
	o.Hooks.HostOnWorktreeReady = []core.Hook{{Command: "echo host > README && git -c user.name=Host -c user.email=host@example.com commit -q -am 'host edit'"}}
	res, err := core.Run(t.Context(), o)
	var me *worktree.MergeError
	if !asError(err, &me) {
		t.Fatalf("err = %v; want a merge error", err)
	}
	hostTip = git(t, repo, "rev-parse", "HEAD")
	if subj := git(t, repo, "log", "-1", "--format=%s"); subj != "host edit" {
		t.Errorf("host branch tip is %q, want the host's commit", subj)
	}
	assertClean(t, repo)
	if b, _ := os.ReadFile(filepath.Join(repo, "README")); string(b) != "host\n" {
		t.Errorf("host README = %q", b)
	}
	branch := me.Branch
	if !strings.HasPrefix(branch, "sanddune/test/") || !slices.Contains(branches(t, repo), branch) {
		t.Fatalf("temporary branch %q not kept (branches %v)", branch, branches(t, repo))
	}
	if res.Branch != branch {
		t.Errorf("Result.Branch = %q, want the kept %q", res.Branch, branch)
	}
	agentCommits := revList(t, repo, "main.."+branch)
	if len(agentCommits) != 1 || !slices.Equal(shas(res), agentCommits) {
		t.Errorf("Result.Commits %v; want the agent's %v", shas(res), agentCommits)
	}
	msg := err.Error()
	if !strings.Contains(msg, branch) || me.Command == "" || !strings.Contains(msg, me.Command) {
		t.Errorf("the error does not name the branch and the command to finish:\n%s", msg)
	}
	if exitCode(err) != exitFailure {
		t.Errorf("exit code %d", exitCode(err))
	}
	if git(t, repo, "rev-parse", "HEAD") != hostTip {
		t.Errorf("host moved")
	}
}

// TestMergeDirtyHost: a merge-to-head that would overwrite uncommitted host
// changes changes nothing and keeps the branch; elsewhere they are fine.
func TestMergeDirtyHost(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	write(t, filepath.Join(repo, "notes.txt"), "tracked\n")
	git(t, repo, "add", "notes.txt")
	git(t, repo, "commit", "-q", "-m", "notes")
	write(t, filepath.Join(repo, "README"), "host wip\n") // uncommitted
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, "echo agent > README && git commit -q -am 'agent edit'"), &term)
	_, err := core.Run(t.Context(), o)
	var me *worktree.MergeError
	if !asError(err, &me) || !slices.Contains(branches(t, repo), me.Branch) {
		t.Fatalf("err = %v; want a merge error keeping the branch", err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "README")); string(b) != "host wip\n" {
		t.Errorf("host README = %q, want the uncommitted host change", b)
	}
	if subj := git(t, repo, "log", "-1", "--format=%s"); subj != "notes" {
		t.Errorf("host branch moved to %q", subj)
	}

	// The agent touching another file merges fine despite the host change.
	o = options(repo, localSandbox(t), commandAgent(t, "echo agent >> notes.txt && git commit -q -am 'agent notes'"), &term)
	res := run(t, o)
	if res.Branch != "main" || len(res.Commits) != 1 || git(t, repo, "log", "-1", "--format=%s") != "agent notes" {
		t.Errorf("branch %q commits %v", res.Branch, res.Commits)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "README")); string(b) != "host wip\n" {
		t.Errorf("host README = %q after the merge", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "notes.txt")); string(b) != "tracked\nagent\n" {
		t.Errorf("host notes.txt = %q: the checkout did not follow the merge", b)
	}
}
