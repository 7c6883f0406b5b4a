package enginetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/gc"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/sdk"
)

// containersOf lists the containers of sanddune runs on repo (never other
// tests').
func containersOf(t *testing.T, repo string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+gc.LabelRepo+"="+repo).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

func worktreeOptions(repo string, term *buffer) core.RunOptions {
	return core.RunOptions{Name: "life", Repo: repo,
		BranchStrategy: core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/life"},
		Logging:        core.Logging{Terminal: runlog.NewTerminal(term, term)}}
}

// TestCreateSandboxRunsReuseTheSandbox: two runs in one sandbox from
// core.CreateSandbox; the second finds what the first installed under the
// sandbox's home, outside the worktree, and continues its result's
// session options. Close (twice: idempotent) removes the container and
// the clean worktree, and reports every commit.
func TestCreateSandboxRunsReuseTheSandbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ref := dockerSandbox(t)
	repo := newRepo(t)
	var term buffer
	o := worktreeOptions(repo, &term)
	o.Sandbox = ref
	sb, err := core.CreateSandbox(ctx, o)
	if err != nil {
		t.Fatalf("CreateSandbox: %v\n%s", err, term.String())
	}
	defer sb.Close(ctx)
	wt := sb.Path()
	first, err := sb.Run(ctx, core.RunOptions{Agent: commandAgent(t, "cat > /dev/null; echo installed > $HOME/tool.txt; "+commitScript("one.txt")), Prompt: "install"})
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	second, err := sb.Run(ctx, core.RunOptions{Agent: commandAgent(t, "cat > /dev/null; cp $HOME/tool.txt seen.txt && git add seen.txt && git commit -qm seen"), Prompt: "use"})
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if len(first.Commits) != 1 || len(second.Commits) != 1 || first.Branch != "agent/life" {
		t.Fatalf("each run reports its own commit: %v and %v on %s", shas(first), shas(second), first.Branch)
	}
	if first.Resume(false) != (core.ResumeOptions{}) {
		t.Errorf("the command agent reports no session, yet Resume = %+v", first.Resume(false))
	}
	res, err := sb.Close(ctx)
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if again, err2 := sb.Close(ctx); again != res || err2 != nil {
		t.Errorf("a second Close returned %v, %v; want the first one's result", again, err2)
	}
	if got := git(t, repo, "show", "agent/life:seen.txt"); got != "installed" {
		t.Fatalf("the second run did not see what the first installed: seen.txt = %q", got)
	}
	if len(res.Commits) != 2 || len(res.Steps) != 2 {
		t.Fatalf("Close's result: %d commits, %d runs; want 2 and 2", len(res.Commits), len(res.Steps))
	}
	if c := containersOf(t, repo); len(c) != 0 {
		t.Errorf("containers left: %v", c)
	}
	if exists(wt) {
		t.Errorf("the clean worktree %s was not removed", wt)
	}
}

// TestWorktreeOutlivesItsSandbox: a sandbox from wt.CreateSandbox closes
// only the sandbox (the container is gone, the worktree stays, and a
// second sandbox follows from where the first left the branch); wt.Close
// then keeps the dirty worktree and says where. Bind-mount (docker) and
// isolated (local): an isolated sandbox's commits reach the branch, and
// the worktree's files, as each run ends.
func TestWorktreeOutlivesItsSandbox(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sandbox func(testing.TB) core.SandboxRef
	}{{"docker", dockerSandbox}, {"local", localSandbox}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ref := tc.sandbox(t)
			repo := newRepo(t)
			var term buffer
			wt, err := core.CreateWorktree(ctx, worktreeOptions(repo, &term))
			if err != nil {
				t.Fatalf("CreateWorktree: %v\n%s", err, term.String())
			}
			defer wt.Close(ctx)
			var made []string
			for i, file := range []string{"a.txt", "b.txt"} {
				sb, err := wt.CreateSandbox(ctx, core.RunOptions{Sandbox: ref})
				if err != nil {
					t.Fatalf("sandbox %d: %v\n%s", i+1, err, term.String())
				}
				res, err := sb.Run(ctx, core.RunOptions{Agent: commandAgent(t, "cat > /dev/null; "+commitScript(file)), Prompt: "x"})
				if err != nil {
					t.Fatalf("run %d: %v\n%s", i+1, err, term.String())
				}
				if len(res.Commits) != 1 || git(t, repo, "rev-parse", "agent/life") != res.Commits[0].SHA {
					t.Fatalf("run %d reports %v; want its one commit, at the tip of agent/life on the host", i+1, shas(res))
				}
				made = append(made, res.Commits[0].SHA)
				if res, err := sb.Close(ctx); res != nil || err != nil {
					t.Fatalf("sandbox Close: %v, %v; want no worktree result and no error", res, err)
				}
				if c := containersOf(t, repo); len(c) != 0 {
					t.Fatalf("the sandbox's container is still there after its Close: %v", c)
				}
				if !exists(filepath.Join(wt.Path(), file)) {
					t.Fatalf("the worktree lacks %s after its sandbox closed", file)
				}
			}
			if st := git(t, wt.Path(), "status", "--porcelain"); st != "" {
				t.Fatalf("the worktree is not at its branch's tip after the runs: %s", st)
			}
			write(t, filepath.Join(wt.Path(), "dirty.txt"), "uncommitted")
			res, err := wt.Close(ctx)
			if err != nil {
				t.Fatalf("worktree Close: %v", err)
			}
			if res.PreservedWorktreePath == "" || !exists(filepath.Join(res.PreservedWorktreePath, "dirty.txt")) {
				t.Fatalf("the dirty worktree is not preserved: %+v", res)
			}
			if strings.Join(shas(res), " ") != strings.Join(made, " ") {
				t.Fatalf("the worktree's commits: %v; want the runs' %v", shas(res), made)
			}
			t.Cleanup(func() {
				exec.Command("git", "-C", repo, "worktree", "remove", "--force", res.PreservedWorktreePath).Run()
			})
		})
	}
}

// TestCreateWorktreeRefusesHead: a worktree cannot be the host's working
// directory; the refusal comes before anything is created.
func TestCreateWorktreeRefusesHead(t *testing.T) {
	repo := newRepo(t)
	before := branches(t, repo)
	var term buffer
	for _, typ := range []core.StrategyType{core.StrategyHead, ""} {
		o := worktreeOptions(repo, &term)
		o.BranchStrategy = core.BranchStrategy{Type: typ}
		_, err := core.CreateWorktree(context.Background(), o)
		var re *core.RunError
		if !errors.As(err, &re) || re.Phase != core.PhaseConfig || !strings.Contains(err.Error(), "branch_strategy") {
			t.Fatalf("strategy %q: %v, want a config error at branch_strategy", typ, err)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, ".sanddune")); err == nil {
		t.Errorf("something was created in %s", repo)
	}
	if after := branches(t, repo); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("branches changed: %v -> %v", before, after)
	}
}

// typed is an Attachment whose terminal types line and collects what the
// session prints: a scripted user at a real PTY in the sandbox (or on the
// host). Like a terminal, its input stays open until the session ends.
func typed(line string, out *buffer) core.Attachment {
	return core.Attachment{Term: "xterm", Attach: func(ctx context.Context, sb sdk.TTYSandbox, req sdk.ExecRequest) (sdk.ExecResult, error) {
		in, user := io.Pipe()
		defer in.Close()
		go fmt.Fprintln(user, line)
		return sb.ExecTTY(ctx, req, sdk.TTY{Size: sdk.WindowSize{Rows: 24, Cols: 80}, Stdin: in, Output: out})
	}}
}

// TestWorktreeInteractiveThenAFK: a worktree shared by an interactive
// session (the user types a line at the agent's terminal; the agent
// commits it) and a later unattended run that builds on that commit, in
// docker and on the host (sandbox = "none"). Each result reports its own
// commit; Close reports both.
func TestWorktreeInteractiveThenAFK(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		target func(t testing.TB) (core.SandboxRef, bool)
	}{
		{"docker", func(t testing.TB) (core.SandboxRef, bool) { return dockerSandbox(t), false }},
		{"host", func(testing.TB) (core.SandboxRef, bool) { return core.SandboxRef{}, true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ref, onHost := tc.target(t)
			repo := newRepo(t)
			var term, screen buffer
			wt, err := core.CreateWorktree(ctx, worktreeOptions(repo, &term))
			if err != nil {
				t.Fatalf("CreateWorktree: %v\n%s", err, term.String())
			}
			defer wt.Close(ctx)
			tui := `printf 'name? '; read name; echo "$name" > typed.txt && git add typed.txt && git commit -qm typed && echo done`
			talk := core.InteractiveOptions{RunOptions: core.RunOptions{Name: "talk", Sandbox: ref, NoSandbox: onHost, Agent: commandAgent(t, tui), Prompt: "talk"},
				Attachment: typed("ada", &screen)}
			first, err := wt.Interactive(ctx, talk)
			if err != nil {
				t.Fatalf("interactive session: %v\nscreen: %q\n%s", err, screen.String(), term.String())
			}
			if !strings.Contains(screen.String(), "name? ") || !strings.Contains(screen.String(), "done") {
				t.Errorf("the session's terminal showed %q; want the prompt and the agent's last line", screen.String())
			}
			second, err := wt.Run(ctx, core.RunOptions{Name: "afk", Sandbox: ref, Agent: commandAgent(t, "cat > /dev/null; sed 's/^/hello /' typed.txt > greeting.txt && git add greeting.txt && git commit -qm greet"), Prompt: "greet"})
			if onHost {
				// an unattended run needs a sandbox: the host session is for interactive use only
				if err == nil {
					t.Fatalf("an unattended run without a sandbox ran: %+v", second)
				}
				second, err = wt.Run(ctx, core.RunOptions{Name: "afk", Sandbox: localSandbox(t), Agent: commandAgent(t, "cat > /dev/null; sed 's/^/hello /' typed.txt > greeting.txt && git add greeting.txt && git commit -qm greet"), Prompt: "greet"})
			}
			if err != nil {
				t.Fatalf("unattended run after the session: %v\n%s", err, term.String())
			}
			if len(first.Commits) != 1 || len(second.Commits) != 1 {
				t.Fatalf("each step reports its own commit: session %v, run %v", shas(first), shas(second))
			}
			res, err := wt.Close(ctx)
			if err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := git(t, repo, "show", "agent/life:greeting.txt"); got != "hello ada" {
				t.Fatalf("the run did not build on the session's commit: greeting.txt = %q", got)
			}
			if len(res.Commits) != 2 || len(res.Steps) != 2 {
				t.Fatalf("Close's result: %d commits, %d steps; want 2 and 2", len(res.Commits), len(res.Steps))
			}
			if c := containersOf(t, repo); len(c) != 0 {
				t.Errorf("containers left: %v", c)
			}
		})
	}
}
