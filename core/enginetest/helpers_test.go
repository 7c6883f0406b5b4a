package enginetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/plugins/bubblewrap"
	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

const signal = "<promise>COMPLETE</promise>"

// gitEnv keeps the tests' git away from the user's and the system's config.
var gitEnv = []string{"LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"}

// git runs git in dir and returns its trimmed stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &gitError{err: err, stderr: stderr.String()}
	}
	return strings.TrimSpace(string(out)), nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + e.stderr }

// newRepo makes a repository on branch main with one commit and a
// repo-local identity (the engine reads it for sandbox commits).
func newRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.name", "Test")
	git(t, dir, "config", "user.email", "test@example.com")
	git(t, dir, "config", "commit.gpgsign", "false")
	write(t, filepath.Join(dir, "README"), "hello\n")
	git(t, dir, "add", "README")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// commitScript commits one new file per call: the shell text an agent runs.
func commitScript(file string) string {
	return "echo " + file + " > " + file + " && git add " + file + " && git commit -q -m 'add " + file + "'"
}

// localSandbox is the local (isolated) sandbox over the plugin protocol.
// bothSandboxes are the daemonless sandboxes end-to-end tests run against:
// one isolated, one bind-mount.
var bothSandboxes = []struct {
	name    string
	sandbox func(testing.TB) core.SandboxRef
}{
	{"Local", localSandbox},
	{"Bubblewrap", bwrapSandbox},
}

func localSandbox(t testing.TB) core.SandboxRef {
	return core.SandboxRef{Address: "sandbox.local.test", Plugin: "local",
		Provider: plugintest.Sandbox(t, local.New()), Config: sdk.Config{Value: cty.EmptyObjectVal}}
}

// bwrapSandbox is the bubblewrap (bind-mount) sandbox over the plugin
// protocol; the test is skipped (failed under SANDDUNE_REQUIRE_ENGINES=1)
// when bwrap cannot run here.
func bwrapSandbox(t testing.TB) core.SandboxRef {
	t.Helper()
	p := bubblewrap.New()
	err := p.Preflight(context.Background(), sdk.PreflightRequest{HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()})
	if err != nil {
		msg := "BUBBLEWRAP ENGINE TESTS NOT RUN: " + err.Error() + " (install bubblewrap: scripts/ci-setup.sh)"
		if os.Getenv("SANDDUNE_REQUIRE_ENGINES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return core.SandboxRef{Address: "sandbox.bubblewrap.test", Plugin: "bubblewrap",
		Provider: plugintest.Sandbox(t, p), Config: sdk.Config{Value: cty.EmptyObjectVal}}
}

// commandAgent is the command agent running `sh -c script` (prompt on
// stdin, every stdout line a text event).
func commandAgent(t testing.TB, script string) core.AgentRef {
	return core.AgentRef{Address: "agent.command.test", Plugin: "command",
		Provider: plugintest.Agent(t, command.New()), Config: commandConfig(script)}
}

func commandConfig(script string) sdk.Config {
	return sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{
		"command": cty.ListVal([]cty.Value{cty.StringVal("sh"), cty.StringVal("-c"), cty.StringVal(script)}),
		"env":     cty.NullVal(cty.Map(cty.String)),
	})}
}

// fake serves a fakeAgent over the plugin protocol.
func fake(t testing.TB, f *fakeAgent) core.AgentRef {
	return core.AgentRef{Address: "agent.fake.test", Plugin: "fake",
		Provider: plugintest.Agent(t, f), Config: sdk.Config{Value: cty.EmptyObjectVal}}
}

// script is a fakeAgent running the same shell text every iteration.
func script(s string) *fakeAgent {
	return &fakeAgent{Script: func(int) string { return s }}
}

// buffer is a goroutine-safe bytes.Buffer.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// options is a run in repo with its terminal output captured in term.
func options(repo string, sb core.SandboxRef, agent core.AgentRef, term *buffer) core.RunOptions {
	return core.RunOptions{
		Name: "test", Repo: repo, Sandbox: sb, Agent: agent, Prompt: "do the work",
		Logging: core.Logging{Terminal: runlog.NewTerminal(term, term)},
	}
}

// run runs o and fails the test on error.
func run(t testing.TB, o core.RunOptions) *core.Result {
	t.Helper()
	res, err := core.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// shas are the commit SHAs of a result.
func shas(res *core.Result) []string {
	var out []string
	for _, c := range res.Commits {
		out = append(out, c.SHA)
	}
	return out
}

// revList lists the commits of a range in the host repo, oldest first.
func revList(t testing.TB, repo, rng string) []string {
	t.Helper()
	out := git(t, repo, "rev-list", "--reverse", rng)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// assertClean fails when the host repo has changes or a merge in progress.
func assertClean(t testing.TB, repo string) {
	t.Helper()
	if st := git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("host repo is dirty:\n%s", st)
	}
	gitDir := git(t, repo, "rev-parse", "--absolute-git-dir")
	for _, f := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD"} {
		if exists(filepath.Join(gitDir, f)) {
			t.Errorf("host repo has %s", f)
		}
	}
}

// branches lists the host repo's branches.
func branches(t testing.TB, repo string) []string {
	t.Helper()
	return strings.Split(git(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads"), "\n")
}

// readLog reads a result's log file ("" in stdout mode).
func readLog(t testing.TB, res *core.Result) string {
	t.Helper()
	if res == nil || res.LogFile == "" {
		return ""
	}
	b, err := os.ReadFile(res.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func asError[T error](err error, target *T) bool { return errors.As(err, target) }

// The CLI's exit codes (cmd/sanddune maps a run's error to them the same way).
const (
	exitFailure   = 1
	exitConfig    = 2
	exitCancelled = 130
)

func exitCode(err error) int {
	var re *core.RunError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &re) && re.Cancelled, errors.Is(err, context.Canceled):
		return exitCancelled
	case errors.As(err, &re) && re.Phase == core.PhaseConfig:
		return exitConfig
	}
	return exitFailure
}
