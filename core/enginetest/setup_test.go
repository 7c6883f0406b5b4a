package enginetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/internal/env"
	"github.com/missingstudio/sanddune/core/internal/hooks"
	"github.com/missingstudio/sanddune/sdk"
)

// TestIsolatedSyncAndPatch: the agent's commits come back with their SHAs
// and its uncommitted work (staged, unstaged, untracked) is saved to a
// patch that applies on the synced branch.
func TestIsolatedSyncAndPatch(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	agent := commitScript("c1.txt") + " && " + commitScript("c2.txt") + " && git rev-list --reverse HEAD~2..HEAD | sed 's/^/SHA /'" +
		" && echo changed >> README && echo staged > staged.txt && git add staged.txt && echo new > untracked.txt"
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, agent), &term)
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/sync"}
	res := run(t, o)

	want := printedSHAs(res.Stdout)
	if len(want) != 2 || !slices.Equal(shas(res), want) || !slices.Equal(revList(t, repo, "main..agent/sync"), want) {
		t.Errorf("SHAs: agent %v, result %v, host %v", want, shas(res), revList(t, repo, "main..agent/sync"))
	}
	if !regexp.MustCompile(`/\.sanddune/patches/test-\d{8}-\d{6}[^/]*\.patch$`).MatchString(res.PatchPath) {
		t.Fatalf("PatchPath = %q, want .sanddune/patches/test-<ts>.patch", res.PatchPath)
	}
	if !strings.HasPrefix(res.PatchPath, repo) {
		t.Errorf("patch %s is not in the host repo %s", res.PatchPath, repo)
	}
	if !strings.Contains(term.String(), res.PatchPath) {
		t.Errorf("the patch is not reported on the terminal:\n%s", term.String())
	}
	check := filepath.Join(t.TempDir(), "check")
	git(t, repo, "worktree", "add", "-q", check, "agent/sync")
	git(t, check, "apply", "--index", res.PatchPath)
	for f, content := range map[string]string{"README": "hello\nchanged\n", "staged.txt": "staged\n", "untracked.txt": "new\n"} {
		if b, err := os.ReadFile(filepath.Join(check, f)); err != nil || string(b) != content {
			t.Errorf("after git apply, %s = %q (%v), want %q", f, b, err, content)
		}
	}
	assertClean(t, repo)
}

// TestPromptHostileArgument: `!` text in an argument value is data, never
// run; the template's own expressions are expanded in the sandbox.
func TestPromptHostileArgument(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	canary := t.TempDir()
	hostile := "!`touch " + canary + "/pwned` $(touch " + canary + "/pwned2) `touch " + canary + "/pwned3`; touch " + canary + "/pwned4"
	dir := t.TempDir()
	write(t, filepath.Join(dir, "prompt.md"), "Work on {{SOURCE_BRANCH}} for {{TARGET_BRANCH}}.\n"+
		"Issue: {{ISSUE}}\n"+
		"Expanded: !`echo hi-from-$(basename \"$PWD\")`\n"+
		"Quoted: !`printf '%s' {{ISSUE}}`\n")
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, "cat"), &term)
	o.Prompt, o.PromptFile, o.BaseDir = "", "prompt.md", dir
	o.PromptArgs = map[string]string{"ISSUE": hostile}
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/prompt"}
	res := run(t, o)

	for _, f := range []string{"pwned", "pwned2", "pwned3", "pwned4"} {
		if exists(filepath.Join(canary, f)) {
			t.Errorf("the hostile argument was executed: %s exists", f)
		}
	}
	want := "Work on agent/prompt for main.\n" +
		"Issue: " + hostile + "\n" +
		"Expanded: hi-from-repo\n" +
		"Quoted: " + hostile
	if strings.TrimSpace(res.Stdout) != want {
		t.Errorf("the agent got:\n%s\nwant:\n%s", res.Stdout, want)
	}

	// An inline prompt is passed literally.
	o = options(repo, localSandbox(t), commandAgent(t, "cat"), &term)
	o.Prompt = "!`touch " + canary + "/inline`"
	res = run(t, o)
	if exists(filepath.Join(canary, "inline")) || strings.TrimSpace(res.Stdout) != o.Prompt {
		t.Errorf("inline prompt not passed literally: %q", res.Stdout)
	}
}

// TestPromptExpressionFailure: a failing expression fails the run with
// the expression and its stderr.
func TestPromptExpressionFailure(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "prompt.md"), "Status: !`echo nope >&2; exit 5`\n")
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, "cat"), &term)
	o.Prompt, o.PromptFile, o.BaseDir = "", "prompt.md", dir
	_, err := core.Run(t.Context(), o)
	if err == nil || !strings.Contains(err.Error(), "echo nope >&2; exit 5") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err = %v; want the expression and its stderr", err)
	}
}

// withEnv is a config object with an env map (the conventional attribute).
func withEnv(m map[string]string) sdk.Config {
	vals := map[string]cty.Value{}
	for k, v := range m {
		vals[k] = cty.StringVal(v)
	}
	return sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"env": cty.MapVal(vals)})}
}

// TestEnvRunLayerWinsOverAgentAndSandboxEnv: the run's env is the top
// layer for every agent: the command agent's own env and the local
// sandbox's env sit below it.
func TestEnvRunLayerWinsOverAgentAndSandboxEnv(t *testing.T) {
	repo := newRepo(t)
	var term buffer
	agent := commandAgent(t, `printf '%s %s %s' "$K" "$AGENT_ONLY" "$SANDBOX_ONLY" > env.txt && git add env.txt && git commit -q -m env`)
	agent.Config = sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{
		"command": agent.Config.Value.GetAttr("command"),
		"env":     cty.MapVal(map[string]cty.Value{"K": cty.StringVal("agent"), "AGENT_ONLY": cty.StringVal("a")}),
	})}
	sb := localSandbox(t)
	sb.Config = withEnv(map[string]string{"SANDBOX_ONLY": "s"})
	o := options(repo, sb, agent, &term)
	o.Env = map[string]string{"K": "run"}
	res := run(t, o)
	if len(res.Commits) != 1 {
		t.Fatalf("commits %v\n%s", res.Commits, term.String())
	}
	if got := git(t, repo, "show", res.Commits[0].SHA+":env.txt"); got != "run a s" {
		t.Errorf("the agent saw K, AGENT_ONLY, SANDBOX_ONLY = %q; want \"run a s\"", got)
	}
}

// TestFakeEnvOverlap: agent-provider and sandbox-provider env sharing keys
// is a configuration error listing the keys (never the values), raised
// before anything starts.
func TestFakeEnvOverlap(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	f := script("true")
	f.Desc.Env = map[string]string{"SHARED_B": "agent-secret-1", "SHARED_A": "agent-secret-2", "AGENT_ONLY": "x"}
	sb := localSandbox(t)
	sb.Config = withEnv(map[string]string{"SHARED_A": "sandbox-secret-1", "SHARED_B": "sandbox-secret-2", "SANDBOX_ONLY": "y"})
	_, err := core.Run(t.Context(), options(repo, sb, fake(t, f), &term))
	var overlap *env.OverlapError
	if !asError(err, &overlap) || !slices.Equal(overlap.Keys, []string{"SHARED_A", "SHARED_B"}) {
		t.Fatalf("err = %v; want an overlap error on SHARED_A, SHARED_B", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "SHARED_A") || !strings.Contains(msg, "SHARED_B") || strings.Contains(msg, "secret") {
		t.Errorf("message must list the keys and no value:\n%s", msg)
	}
	if exitCode(err) != exitConfig {
		t.Errorf("exit code %d, want 2", exitCode(err))
	}
	assertNothingStarted(t, repo)
}

// TestFakeRequiredEnvMissing: missing credentials fail before anything
// starts, naming the keys.
func TestFakeRequiredEnvMissing(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	f := script("true")
	f.Desc.RequiredEnv = [][]string{{"SANDDUNE_TEST_NO_SUCH_KEY_A", "SANDDUNE_TEST_NO_SUCH_KEY_B"}}
	_, err := core.Run(t.Context(), options(repo, localSandbox(t), fake(t, f), &term))
	var missing *env.MissingError
	if !asError(err, &missing) || !strings.Contains(err.Error(), "SANDDUNE_TEST_NO_SUCH_KEY_A") || !strings.Contains(err.Error(), "SANDDUNE_TEST_NO_SUCH_KEY_B") {
		t.Fatalf("err = %v; want a missing-env error naming both keys", err)
	}
	if exitCode(err) != exitConfig {
		t.Errorf("exit code %d, want 2", exitCode(err))
	}
	assertNothingStarted(t, repo)
}

// assertNothingStarted: no worktree, branch, log or other state.
func assertNothingStarted(t *testing.T, repo string) {
	t.Helper()
	if exists(filepath.Join(repo, ".sanddune")) {
		t.Errorf(".sanddune created by a run that failed its checks")
	}
	if b := branches(t, repo); !slices.Equal(b, []string{"main"}) {
		t.Errorf("branches %v", b)
	}
	assertClean(t, repo)
}

// TestFakeEnvLayers: every layer reaches the agent, the run's env wins,
// and the host env stays out unless asked for.
func TestFakeEnvLayers(t *testing.T) {
	repo := newRepo(t)
	t.Setenv("SANDDUNE_TEST_HOST_ONLY", "leak")
	t.Setenv("SANDDUNE_TEST_FROM_HOST", "host")
	write(t, filepath.Join(repo, ".sanddune", ".env"), "DOT=dot\nSANDDUNE_TEST_FROM_HOST=\nOVERRIDDEN=dot\n")
	f := script(`echo "TEXT $DOT,$SANDDUNE_TEST_FROM_HOST,$AGENT_ONLY,$SANDBOX_ONLY,$OVERRIDDEN,$RUN,${SANDDUNE_TEST_HOST_ONLY-unset}"`)
	f.Desc.Env = map[string]string{"AGENT_ONLY": "agent", "OVERRIDDEN": "agent"}
	sb := localSandbox(t)
	sb.Config = withEnv(map[string]string{"SANDBOX_ONLY": "sandbox"})
	var term buffer
	o := options(repo, sb, fake(t, f), &term)
	o.Env = map[string]string{"RUN": "run", "OVERRIDDEN": "run", "SECRET": "s3cr3t-value"}
	o.ShowEnv = []string{"SANDBOX_ONLY"} // every layer's values are redacted unless shown
	res := run(t, o)
	if got, want := strings.TrimSpace(res.Stdout), "dot,host,agent,sandbox,run,run,unset"; got != want {
		t.Errorf("agent env %q, want %q", got, want)
	}
	if strings.Contains(readLog(t, res)+term.String(), "s3cr3t-value") {
		t.Errorf("an env value reached the log")
	}
}

// TestHooksOrder: copy_to_worktree, host on_worktree_ready (in order,
// while the sandbox is created), then both on_sandbox_ready sides, then
// the agent.
func TestHooksOrder(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	write(t, filepath.Join(repo, ".gitignore"), "local.env\n")
	git(t, repo, "add", ".gitignore")
	git(t, repo, "commit", "-q", "-m", "ignore")
	write(t, filepath.Join(repo, "local.env"), "copied\n")
	order := filepath.Join(t.TempDir(), "order")
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, "echo agent >> "+order), &term)
	o.CopyToWorktree = []string{"local.env"}
	o.Hooks = core.Hooks{
		HostOnWorktreeReady: []core.Hook{
			{Command: "sleep 0.2; echo \"host1 $PWD\" >> " + order},
			{Command: "echo host2 >> " + order},
		},
		HostOnSandboxReady:    []core.Hook{{Command: "echo host-ready >> " + order}},
		SandboxOnSandboxReady: []core.Hook{{Command: "cat local.env && echo \"sandbox $(cat local.env)\" >> " + order}},
	}
	run(t, o)
	b, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 5 || lines[0] != "host1 "+repo || lines[1] != "host2" || lines[4] != "agent" {
		t.Fatalf("hook order:\n%s", b)
	}
	ready := []string{lines[2], lines[3]}
	slices.Sort(ready)
	if !slices.Equal(ready, []string{"host-ready", "sandbox copied"}) {
		t.Errorf("on_sandbox_ready hooks: %v", ready)
	}
}

// TestHookFailure: a failing or hanging hook fails setup with its command
// and output tail; nothing after it runs.
func TestHookFailure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		hooks core.Hooks
		where string
		want  []string
	}{
		{"HostExit", core.Hooks{HostOnWorktreeReady: []core.Hook{{Command: "echo boom-output; echo boom-stderr >&2; exit 3"}, {Command: "touch never"}}},
			hooks.Host, []string{"echo boom-output; echo boom-stderr >&2; exit 3", "boom-output", "boom-stderr", "3"}},
		{"SandboxExit", core.Hooks{SandboxOnSandboxReady: []core.Hook{{Command: "echo sb-broke >&2; exit 4"}}},
			hooks.Sandbox, []string{"echo sb-broke >&2; exit 4", "sb-broke", "4"}},
		{"HostTimeout", core.Hooks{HostOnSandboxReady: []core.Hook{{Command: "echo waiting; sleep 30", Timeout: 300 * time.Millisecond}}},
			hooks.Host, []string{"sleep 30", "waiting", "300ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t)
			var term buffer
			o := options(repo, localSandbox(t), commandAgent(t, "touch "+filepath.Join(repo, "agent-ran")), &term)
			o.Hooks = c.hooks
			start := time.Now()
			_, err := core.Run(t.Context(), o)
			var re *core.RunError
			var he *hooks.Error
			if !asError(err, &re) || re.Phase != core.PhaseHooks || !asError(err, &he) || he.Where != c.where {
				t.Fatalf("err = %v; want a %s hook error", err, c.where)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q:\n%v", w, err)
				}
			}
			if exists(filepath.Join(repo, "agent-ran")) || exists(filepath.Join(repo, "never")) {
				t.Errorf("something ran after the failed hook")
			}
			if time.Since(start) > 20*time.Second {
				t.Errorf("the hook was not stopped (%s)", time.Since(start))
			}
			assertClean(t, repo)
		})
	}
}

// recordingSandbox records the env of the sandboxes it creates and of
// every Exec in them, and how many it closed; marker, when set, is
// written once a sandbox is created, and createErr fails Create.
type recordingSandbox struct {
	sdk.SandboxProvider
	marker    string
	createErr error
	mu        sync.Mutex
	created   []map[string]string
	execs     []map[string]string
	closed    int
}

func (p *recordingSandbox) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	if p.createErr != nil {
		return nil, p.createErr
	}
	sb, err := p.SandboxProvider.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.created = append(p.created, req.Env)
	p.mu.Unlock()
	if p.marker != "" {
		if err := os.WriteFile(p.marker, nil, 0o644); err != nil {
			return nil, err
		}
	}
	return &recordingExecs{Sandbox: sb, p: p}, nil
}

type recordingExecs struct {
	sdk.Sandbox
	p *recordingSandbox
}

// recorded is the local sandbox recorded by rec.
func recorded(t *testing.T, rec *recordingSandbox) core.SandboxRef {
	ref := localSandbox(t)
	rec.SandboxProvider, ref.Provider = ref.Provider, rec
	return ref
}

func (s *recordingExecs) Close(ctx context.Context) error {
	s.p.mu.Lock()
	s.p.closed++
	s.p.mu.Unlock()
	return s.Sandbox.Close(ctx)
}

func (s *recordingExecs) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	s.p.mu.Lock()
	s.p.execs = append(s.p.execs, req.Env)
	s.p.mu.Unlock()
	return s.Sandbox.Exec(ctx, req, out)
}

// TestEnvSentOncePerSandbox: the run's env goes into the sandbox when it
// is created, which every Exec starts with; the agent's execs add only
// what the sandbox lacks (here a later run's own key in a sandbox kept
// open), and the agent still sees every value.
func TestEnvSentOncePerSandbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t)
	var term buffer
	rec := &recordingSandbox{}
	ref := recorded(t, rec)
	o := options(repo, ref, commandAgent(t, `cat >/dev/null; echo "$SHARED,$RUN_ONLY"`), &term)
	o.Env = map[string]string{"SHARED": "s"}
	res := run(t, o)
	if got := strings.TrimSpace(res.Stdout); got != "s," {
		t.Errorf("agent saw %q, want \"s,\"", got)
	}
	if len(rec.created) != 1 || rec.created[0]["SHARED"] != "s" || len(rec.execs) == 0 {
		t.Fatalf("created %v, execs %v", rec.created, rec.execs)
	}
	for _, env := range rec.execs {
		if _, ok := env["SHARED"]; ok {
			t.Errorf("an exec re-sent the sandbox's env: %v", env)
		}
	}

	rec.created, rec.execs = nil, nil
	so := worktreeOptions(repo, &term)
	so.Sandbox, so.Env = ref, map[string]string{"SHARED": "s"}
	sb, err := core.CreateSandbox(ctx, so)
	if err != nil {
		t.Fatalf("CreateSandbox: %v\n%s", err, term.String())
	}
	defer sb.Close(ctx)
	res2, err := sb.Run(ctx, core.RunOptions{Agent: commandAgent(t, `cat >/dev/null; echo "$SHARED,$RUN_ONLY"`), Prompt: "p",
		Env: map[string]string{"SHARED": "s", "RUN_ONLY": "r"}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := strings.TrimSpace(res2.Stdout); got != "s,r" {
		t.Errorf("agent saw %q, want \"s,r\"", got)
	}
	agentExecs := 0
	for _, env := range rec.execs {
		if env["RUN_ONLY"] == "r" {
			agentExecs++
		}
		if _, ok := env["SHARED"]; ok {
			t.Errorf("an exec re-sent the sandbox's env: %v", env)
		}
	}
	if agentExecs != 1 {
		t.Errorf("%d execs carried the run's own RUN_ONLY; want the agent's one: %v", agentExecs, rec.execs)
	}
}

// waitFor is a host hook waiting (up to a minute) for a file to appear.
func waitFor(file string) string {
	return fmt.Sprintf("for i in $(seq 600); do [ -e %s ] && exit 0; sleep 0.1; done; echo never created; exit 1", file)
}

// TestSandboxCreatedWhileTheWorktreeIsReadied: the sandbox is created
// while the host on_worktree_ready hooks run (the hook here waits for
// it); a hook that fails then fails the run in its phase, and the
// sandbox created meanwhile is removed.
func TestSandboxCreatedWhileTheWorktreeIsReadied(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		repo := newRepo(t)
		var term buffer
		rec := &recordingSandbox{marker: filepath.Join(t.TempDir(), "created")}
		ref := recorded(t, rec)
		o := options(repo, ref, commandAgent(t, "cat >/dev/null; echo done"), &term)
		hooks := []core.Hook{{Command: waitFor(rec.marker)}}
		if fail {
			hooks = append(hooks, core.Hook{Command: "exit 3"})
		}
		o.Hooks = core.Hooks{HostOnWorktreeReady: hooks}
		res, err := core.Run(t.Context(), o)
		var re *core.RunError
		switch {
		case !fail && err != nil:
			t.Fatalf("Run: %v\n%s", err, term.String())
		case !fail && strings.TrimSpace(res.Stdout) != "done":
			t.Errorf("stdout %q", res.Stdout)
		case fail && (!asError(err, &re) || re.Phase != core.PhaseHooks):
			t.Fatalf("err = %v; want the hook's failure", err)
		}
		if len(rec.created) != 1 || rec.closed != 1 {
			t.Errorf("fail=%v: %d sandbox(es) created, %d closed; want 1 and 1", fail, len(rec.created), rec.closed)
		}
	}
}

// TestSandboxFailingWhileTheWorktreeIsReadied: a Create that fails while
// the host hooks run is the run's error, naming the run and the sandbox
// block; the hooks ran to their end, and nothing is left.
func TestSandboxFailingWhileTheWorktreeIsReadied(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	rec := &recordingSandbox{createErr: errors.New("the engine said no")}
	ref := recorded(t, rec)
	ran := filepath.Join(t.TempDir(), "ran")
	o := options(repo, ref, commandAgent(t, "echo never"), &term)
	o.Hooks = core.Hooks{HostOnWorktreeReady: []core.Hook{{Command: "touch " + ran}}}
	_, err := core.Run(t.Context(), o)
	var re *core.RunError
	if !asError(err, &re) || re.Phase != core.PhaseSandbox || re.Run != "test" || re.Plugin != ref.Address || !strings.Contains(err.Error(), "the engine said no") {
		t.Fatalf("err = %#v; want the sandbox's failure naming the run and %s", err, ref.Address)
	}
	if !exists(ran) {
		t.Errorf("the host hook did not run")
	}
	assertClean(t, repo)
}

// TestInterruptWhileTheWorktreeIsReadied: a cancellation while the host
// hooks run and the sandbox is up (created meanwhile) ends the run as
// cancelled and removes the sandbox.
func TestInterruptWhileTheWorktreeIsReadied(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	rec := &recordingSandbox{marker: filepath.Join(t.TempDir(), "created")}
	ref := recorded(t, rec)
	o := options(repo, ref, commandAgent(t, "echo never"), &term)
	o.Hooks = core.Hooks{HostOnWorktreeReady: []core.Hook{{Command: "sleep 60"}}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for !exists(rec.marker) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := core.Run(ctx, o)
	var re *core.RunError
	if !asError(err, &re) || !re.Cancelled {
		t.Fatalf("err = %v; want a cancelled run", err)
	}
	if len(rec.created) != 1 || rec.closed != 1 {
		t.Errorf("%d sandbox(es) created, %d closed; want 1 and 1", len(rec.created), rec.closed)
	}
}

// slowSandbox is a provider whose Create waits (as for a place in a
// queue) until its context ends, and records that it did.
type slowSandbox struct {
	sdk.SandboxProvider
	stopped chan struct{}
}

func (p *slowSandbox) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	select {
	case <-ctx.Done():
		close(p.stopped)
		return nil, ctx.Err()
	case <-time.After(2 * time.Minute):
		return nil, errors.New("Create was never stopped")
	}
}

// TestWorktreeHookFailureStopsTheSandboxCreate: a failing host
// on_worktree_ready hook, which runs while the sandbox is created, stops
// that creation (a queued pod, say) instead of waiting for it, and the run
// fails with the hook's error.
func TestWorktreeHookFailureStopsTheSandboxCreate(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	ref := localSandbox(t)
	slow := &slowSandbox{SandboxProvider: ref.Provider, stopped: make(chan struct{})}
	ref.Provider = slow
	o := options(repo, ref, commandAgent(t, "true"), &term)
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/hook"}
	o.Hooks = core.Hooks{HostOnWorktreeReady: []core.Hook{{Command: "exit 3"}}}
	_, err := core.Run(t.Context(), o)
	var re *core.RunError
	if !asError(err, &re) || re.Phase != core.PhaseHooks || re.Cancelled {
		t.Fatalf("err = %v; want the hook's failure", err)
	}
	select {
	case <-slow.stopped:
	default:
		t.Fatal("the run ended without stopping the sandbox's Create")
	}
	assertClean(t, repo)
}
