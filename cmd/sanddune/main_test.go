package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests drive the real sanddune binary, which serves its built-in
// plugins by re-executing itself, and a third-party plugin built from
// examples/tmpdir-sandbox.
var (
	sanddune  string
	pluginDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sanddune-cli-test-")
	if err != nil {
		panic(err)
	}
	sanddune = filepath.Join(dir, "bin", "sanddune")
	pluginDir = filepath.Join(dir, "plugins")
	// The example is a module of its own (examples/go.mod): built from there.
	for _, b := range [][3]string{
		{sanddune, ".", "."},
		{filepath.Join(pluginDir, "sanddune-plugin-tmpdir"), "../../examples", "./tmpdir-sandbox"},
	} {
		if out, err := exec.Command("go", "build", "-C", b[1], "-o", b[0], b[2]).CombinedOutput(); err != nil {
			panic("go build " + b[1] + "/" + b[2] + ": " + err.Error() + "\n" + string(out))
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gitRepo makes a repo with one commit and returns its path.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func sandduneCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(sanddune, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SANDDUNE_PLUGIN_PATH="+pluginDir, "XDG_DATA_HOME="+filepath.Join(dir, ".xdg"))
	return cmd
}

func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := sandduneCmd(dir, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// commitAgent is a scripted agent: it reads the prompt, commits a file and
// prints the completion signal.
const commitAgent = `["sh", "-c", "cat > prompt.txt && git add prompt.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: save prompt' && echo '<promise>COMPLETE</promise>'"]`

func TestPluginsListShowsBuiltinsAndExternalPlugin(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), "plugins", "list")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"local    ", "command", "built-in", "tmpdir", filepath.Join(pluginDir, "sanddune-plugin-tmpdir")} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plugins list lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestValidateReportsPluginAttributeTypoWithPosition(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}

agent "command" "script" {
  comand = ["true"]
}

run "hello" {
  prompt = "hi"
}
`)
	r := run(t, dir, "validate")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	for _, want := range []string{".sanddune/sanddune.hcl:4:3", "comand", `Did you mean "command"?`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, r.stderr)
		}
	}
	// The same config is a usage error (2) for run, and nothing starts.
	if r := run(t, dir, "run"); r.code != 2 {
		t.Fatalf("run: exit %d, want 2\n%s", r.code, r.stderr)
	}
}

func TestValidateReportsPluginDiagnostics(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "cfg.hcl"), `sandbox "tmpdir" "net" {
  network = "bridge"
}
agent "command" "a" {
  command = ["true"]
}
run "x" {
  prompt = "hi"
}
`)
	r := run(t, dir, "validate", "-c", "cfg.hcl")
	if r.code != 1 || !strings.Contains(r.stderr, "cfg.hcl:2:") || !strings.Contains(r.stderr, "network") {
		t.Fatalf("exit %d, want 1 with a diagnostic on network\n%s", r.code, r.stderr)
	}
}

func TestRunWithThirdPartyPluginLandsCommit(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `variable "who" { default = "world" }
sandbox "tmpdir" "scratch" {}
agent "command" "script" {
  command = `+commitAgent+`
}
run "hello" {
  prompt          = "hello ${var.who}"
  branch_strategy = { type = "branch", branch = "agent/hello" }
}
`)
	r := run(t, dir, "run", "--json", "--var", "who=sanddune")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Runs []struct {
			Name             string
			Branch           string
			Commits          []struct{ SHA string }
			CompletionSignal *string `json:"completion_signal"`
			LogFile          *string `json:"log_file"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, r.stdout)
	}
	if len(doc.Runs) != 1 || doc.Runs[0].Branch != "agent/hello" || len(doc.Runs[0].Commits) != 1 ||
		doc.Runs[0].CompletionSignal == nil || *doc.Runs[0].CompletionSignal != "<promise>COMPLETE</promise>" {
		t.Fatalf("unexpected result: %s", r.stdout)
	}
	show := exec.Command("git", "show", "agent/hello:prompt.txt")
	show.Dir = dir
	got, err := show.Output()
	if err != nil || strings.TrimSpace(string(got)) != "hello sanddune" {
		t.Fatalf("agent/hello:prompt.txt = %q (%v), want the rendered prompt", got, err)
	}
	if doc.Runs[0].LogFile == nil || !strings.Contains(r.stderr, "tail -f") {
		t.Errorf("file logging: log_file %v, stderr %q", doc.Runs[0].LogFile, r.stderr)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	for _, args := range [][]string{{"--no-such-flag"}, {"run", "--log", "tty"}, {"run", "-c", "missing.hcl"}, {"local"}} {
		if r := run(t, dir, args...); r.code != 2 {
			t.Errorf("sanddune %v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
}

// TestInterruptKillsAgentAndPlugins sends SIGINT during an iteration: the
// run is cancelled (exit 130), the agent process dies, and no plugin
// process outlives sanddune.
func TestInterruptKillsAgentAndPlugins(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "agent.pid")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "hang" {
  command = ["sh", "-c", "echo $$ > `+marker+`; echo started; exec sleep 1000"]
}
run "hang" {
  prompt  = "wait"
  logging { type = "stdout" }
}
`)
	cmd := sandduneCmd(dir, "run")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "started") {
	}
	plugins := pluginProcesses(t, cmd.Process.Pid)
	if len(plugins) == 0 {
		t.Fatal("no plugin processes found while the run was going")
	}
	cmd.Process.Signal(os.Interrupt)
	go func() {
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s", err, stderr.String())
	}
	pidb, _ := os.ReadFile(marker)
	var agentPID int
	if _, err := fmtSscan(strings.TrimSpace(string(pidb)), &agentPID); err != nil {
		t.Fatalf("agent pid: %v", err)
	}
	for _, pid := range append(plugins, agentPID) {
		if processAlive(pid) {
			t.Errorf("process %d outlived sanddune", pid)
		}
	}
}

// pluginProcesses lists the plugin processes a sanddune process started
// (never other tests' or runs').
func pluginProcesses(t *testing.T, parent int) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmtSscan(e.Name(), &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), sanddune+"\x00"+serveCommand) {
			continue
		}
		// /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces.
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		var state string
		var ppid int
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if _, err := fmt.Sscan(rest, &state, &ppid); err == nil && ppid == parent {
			pids = append(pids, pid)
		}
	}
	return pids
}

func processAlive(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
		if err != nil || strings.Contains(string(stat), ") Z ") || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func TestValidateRejectsResumeForAgentWithoutSessions(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "cfg.hcl"), `sandbox "local" "dev" {}
agent "opencode" "oc" {
  model = "anthropic/claude-sonnet-4-5"
}
run "resume" {
  prompt         = "go on"
  resume_session = "ses_123"
  allow_unconfined = true
}
`)
	r := run(t, dir, "validate", "-c", "cfg.hcl")
	if r.code != 1 || !strings.Contains(r.stderr, "cfg.hcl:7:") || !strings.Contains(r.stderr, "Cannot resume") {
		t.Fatalf("exit %d, want 1 with a diagnostic on resume_session\n%s", r.code, r.stderr)
	}
}

// TestValidateRunsTheEnginesChecks: problems core.Run would refuse before
// starting (prompt keys, branch names, env overlap) are diagnostics of
// validate, with the position of the run.
func TestValidateRunsTheEnginesChecks(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "p.md"), "Fix {{ISSUE}} and {{NOPE}}\n")
	writeFile(t, filepath.Join(dir, "cfg.hcl"), `sandbox "bubblewrap" "b" {
  env = { FOO = "1" }
}
agent "command" "a" {
  command = ["true"]
  env     = { FOO = "2" }
}
run "keys" {
  prompt_file = "p.md"
  prompt_args = { ISSUE = "7" }
}
run "branch" {
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "bad name" }
}
run "env" {
  prompt = "x"
}
`)
	r := run(t, dir, "validate", "-c", "cfg.hcl")
	for _, want := range []string{"cfg.hcl:9:", "{{NOPE}}", "cfg.hcl:14:", `invalid branch name "bad name"`, "cfg.hcl:16:", "both set FOO"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("validate output lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
}

func TestParallelRunsOnOneBranchAreRefused(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["true"]
}
run "a" {
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "same" }
}
run "b" {
  prompt          = "y"
  branch_strategy = { type = "branch", branch = "same" }
}
`)
	r := run(t, dir, "run", "-p", "2")
	if r.code != 2 || !strings.Contains(r.stderr, `runs "a" and "b" both work on branch same`) {
		t.Fatalf("exit %d, want 2 naming both runs\n%s", r.code, r.stderr)
	}
}

func TestRunFromRepoSubdirectoryFindsTheConfig(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = `+commitAgent+`
}
run "sub" {
  prompt = "from a subdirectory"
}
`)
	sub := filepath.Join(dir, "deep", "er")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := run(t, sub, "run"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if got := gitOut(t, dir, "show", "main:prompt.txt"); got != "from a subdirectory" {
		t.Fatalf("main:prompt.txt = %q", got)
	}
}

// TestJSONOfAFailedRunHasTheSameShape: a failed run's entry has every key
// of a successful one, in the same order, plus "error".
func TestJSONOfAFailedRunHasTheSameShape(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "ok" {
  command = ["sh", "-c", "echo fine"]
}
agent "command" "fail" {
  command = ["sh", "-c", "echo '<b>broken</b>'; exit 3"]
}
run "ok" {
  agent  = agent.command.ok
  prompt = "x"
}
run "fail" {
  agent  = agent.command.fail
  prompt = "x"
}
`)
	r := run(t, dir, "run", "--json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	keys := regexp.MustCompile(`(?m)^      "([a-z_]+)":`)
	var shapes []string
	for _, entry := range strings.Split(r.stdout, "\n    },\n")[0:2] {
		var ks []string
		for _, m := range keys.FindAllStringSubmatch(entry, -1) {
			ks = append(ks, m[1])
		}
		shapes = append(shapes, strings.Join(ks, ","))
	}
	want := "name,branch,commits,completion_signal,iterations,stdout,output,log_file,preserved_worktree_path,patch_path,steps,error,skipped"
	if shapes[0] != want || shapes[1] != want {
		t.Fatalf("key order:\n ok:   %s\n fail: %s\n want: %s\n%s", shapes[0], shapes[1], want, r.stdout)
	}
	if !strings.Contains(r.stdout, `"error": null`) || !strings.Contains(r.stdout, "<b>broken</b>") {
		t.Fatalf("want error null for the good run and unescaped output:\n%s", r.stdout)
	}
}

// TestCopyToWorktreeKeepsSymlinks: an ignored symlink pointing out of the
// repo is copied into an isolated sandbox as a symlink, not as the content
// of the host file it points to.
func TestCopyToWorktreeKeepsSymlinks(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	secret := filepath.Join(t.TempDir(), "credentials")
	writeFile(t, secret, "s3cr3t\n")
	if err := os.Symlink(secret, filepath.Join(dir, ".env")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["sh", "-c", "if test -L .env; then echo kind=symlink; else echo kind=file; fi"]
}
run "copy" {
  prompt           = "x"
  copy_to_worktree = [".env"]
}
`)
	r := run(t, dir, "run", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, "kind=symlink") {
		t.Fatalf("exit %d, want the agent to see a symlink\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestRepoWithoutCommitsIsAUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["true"]
}
run "x" {
  prompt = "x"
}
`)
	r := run(t, dir, "run")
	if r.code != 2 || !strings.Contains(r.stderr, "has no commits yet") || !strings.Contains(r.stderr, "make a first commit") {
		t.Fatalf("exit %d, want 2 with a hint\n%s", r.code, r.stderr)
	}
}

func TestUnknownPluginSuggestsTheClosestName(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "cfg.hcl"), `sandbox "dokker" "d" {}
agent "command" "a" {
  command = ["true"]
}
run "x" {
  prompt = "x"
}
`)
	r := run(t, dir, "validate", "-c", "cfg.hcl")
	if r.code != 1 || !strings.Contains(r.stderr, "cfg.hcl:1:9") || !strings.Contains(r.stderr, `Did you mean "docker"?`) {
		t.Fatalf("exit %d, want a diagnostic suggesting docker\n%s", r.code, r.stderr)
	}
}

// TestRunSelectedRunWhileAnotherIsBroken: `sanddune run a` runs a although
// run b of the same file is broken; b's problem is one warning. validate
// reports it once, as an error.
func TestRunSelectedRunWhileAnotherIsBroken(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "cfg.hcl"), `sandbox "local" "dev" {}
sandbox "bubblewrap" "shared" {
  env = { FOO = "1" }
}
agent "command" "a" {
  command = `+commitAgent+`
}
agent "command" "shared" {
  command = ["true"]
  env     = { FOO = "2" }
}
run "a" {
  sandbox         = sandbox.local.dev
  agent           = agent.command.a
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "agent/a" }
}
run "b" {
  sandbox = sandbox.bubblewrap.shared
  agent   = agent.command.shared
  prompt  = "x"
}
`)
	r := run(t, dir, "run", "-c", "cfg.hcl", "a")
	if r.code != 0 || strings.Count(r.stderr, "both set FOO") != 1 || !strings.Contains(r.stderr, "Warning") {
		t.Fatalf("run a: exit %d, want 0 with b's overlap as one warning\n%s", r.code, r.stderr)
	}
	r = run(t, dir, "validate", "-c", "cfg.hcl")
	if r.code != 1 || strings.Count(r.stderr, "both set FOO") != 1 || !strings.Contains(r.stderr, "cfg.hcl:18:") {
		t.Fatalf("validate: exit %d, want 1 with b's overlap once, at run b\n%s", r.code, r.stderr)
	}
}

// TestSudoHookOnBubblewrapReportedOnce: a sudo hook on a sandbox without
// sudo is one diagnostic, at the hooks block.
func TestSudoHookOnBubblewrapReportedOnce(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "cfg.hcl"), `sandbox "bubblewrap" "b" {}
agent "command" "a" {
  command = ["true"]
}
run "r" {
  prompt = "x"
  hooks {
    sandbox {
      on_sandbox_ready {
        command = "apt-get install -y jq"
        sudo    = true
      }
    }
  }
}
`)
	for _, args := range [][]string{{"validate", "-c", "cfg.hcl"}, {"run", "-c", "cfg.hcl"}} {
		r := run(t, dir, args...)
		if r.code == 0 || strings.Count(r.stderr, "cannot run hooks with sudo") != 1 || !strings.Contains(r.stderr, "cfg.hcl:7:") {
			t.Fatalf("%v: exit %d, want one sudo diagnostic at the hooks block\n%s", args, r.code, r.stderr)
		}
	}
}

// TestPluginCommandsGoThroughCobra: a plugin's commands are sanddune
// commands: --log-level works for them, an unknown word is an unknown
// command.
func TestPluginCommandsGoThroughCobra(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, "docker", "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "nope" for "sanddune docker"`) {
		t.Fatalf("docker nope: exit %d\n%s", r.code, r.stderr)
	}
	r = run(t, dir, "--log-level", "debug", "docker", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "build-image") || !strings.Contains(r.stderr, "[DEBUG]") {
		t.Fatalf("--log-level debug docker --help: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, dir, "docker", "build-image", "--log-level=debug", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "sanddune docker build-image") || !strings.Contains(r.stderr, "[DEBUG]") {
		t.Fatalf("docker build-image --log-level=debug --help: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestDryRunPrintsThePlan: run --dry-run prints what each run would do,
// as text or JSON, and starts nothing.
func TestDryRunPrintsThePlan(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "cfg.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = `+commitAgent+`
}
run "a" {
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "agent/dry" }
  env             = { SECRET_TOKEN = "hunter2" }
}
`)
	r := run(t, dir, "run", "-c", "cfg.hcl", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "run a") || !strings.Contains(r.stdout, "commits land on agent/dry") ||
		!strings.Contains(r.stdout, "SECRET_TOKEN") || strings.Contains(r.stdout+r.stderr, "hunter2") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, dir, "run", "-c", "cfg.hcl", "--dry-run", "--json")
	var doc struct {
		Runs []struct {
			Name     string `json:"name"`
			Strategy string `json:"branch_strategy"`
			Branch   string `json:"branch"`
			Sandbox  string `json:"sandbox"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v:\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(doc.Runs) != 1 || doc.Runs[0].Name != "a" || doc.Runs[0].Strategy != "branch" || doc.Runs[0].Branch != "agent/dry" || doc.Runs[0].Sandbox != "sandbox.local.dev" {
		t.Fatalf("plan %+v", doc)
	}
	if out := gitOut(t, dir, "branch", "--list", "agent/dry"); out != "" || fileExists(filepath.Join(dir, ".sanddune")) {
		t.Fatalf("a dry run started something: branch %q", out)
	}
}

// TestUnknownSubcommandsAreUsageErrors: a word that is no subcommand is a
// usage error (exit 2) with a did-you-mean, also under a command group.
func TestUnknownSubcommandsAreUsageErrors(t *testing.T) {
	for args, want := range map[string]string{
		"plugins instal":    "Did you mean this?\n\tinstall",
		"plugins frob":      `unknown command "frob" for "sanddune plugins"; sanddune plugins has: install, list, lock, test`,
		"plugins lst":       "Did you mean this?\n\tlist",
		"valdate":           "Did you mean this?\n\tvalidate",
		"plugins list x":    `unknown command "x"`,
		"docker buld-img":   `unknown command "buld-img" for "sanddune docker"; sanddune docker has: build-image`,
		"docker bild-image": "Did you mean this?\n\tbuild-image",
	} {
		r := run(t, t.TempDir(), strings.Fields(args)...)
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("sanddune %s: exit %d, want 2 with %q:\n%s%s", args, r.code, want, r.stdout, r.stderr)
		}
	}
	if r := run(t, t.TempDir(), "plugins"); r.code != 0 || !strings.Contains(r.stdout, "Available Commands") {
		t.Errorf("sanddune plugins: exit %d, want its help:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestGitMissingIsSaid: without git on PATH the error says so, not that
// the directory is outside a git working tree.
func TestGitMissingIsSaid(t *testing.T) {
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["true"]
}
run "r" {
  prompt = "hi"
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, "PATH="+t.TempDir())
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "git is not installed or not on PATH") || strings.Contains(string(out), "not inside a git working tree") ||
		strings.Contains(string(out), "inside a git repository") {
		t.Fatalf("exit %d, want 2 saying git is missing:\n%s", cmd.ProcessState.ExitCode(), out)
	}
}
