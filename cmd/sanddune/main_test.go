package main

import (
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

// The tests drive the real sanddune binary with its built-in plugin
// binaries installed beside it, and a third-party plugin built from
// examples/tmpdir-sandbox.
var (
	sanddune  string
	pluginDir string
)

// builtEnv names the directory TestMain built into: a test binary run
// again by its own test (as another user) uses it.
const builtEnv = "SANDDUNE_TEST_CLI_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(builtEnv); dir != "" {
		sanddune, pluginDir = filepath.Join(dir, "bin", "sanddune"), filepath.Join(dir, "plugins")
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "sanddune-cli-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // for tests run again as another user
	}
	if err != nil {
		panic(err)
	}
	sanddune = filepath.Join(dir, "bin", "sanddune")
	pluginDir = filepath.Join(dir, "plugins")
	// sanddune and its built-in plugins, as make install lays them out. The
	// example is a module of its own (examples/go.mod): built from there,
	// at the same time (the links overlap).
	var builds []*exec.Cmd
	var outs []*bytes.Buffer
	for _, b := range [][3]string{
		{filepath.Dir(sanddune) + "/", "../..", "./cmd/..."},
		{filepath.Join(pluginDir, "sanddune-plugin-tmpdir"), "../../examples", "./tmpdir-sandbox"},
	} {
		cmd := exec.Command("go", "build", "-C", b[1], "-o", b[0], b[2])
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as make install builds them (the egress enforcer runs in any image)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		builds, outs = append(builds, cmd), append(outs, out)
	}
	for i, cmd := range builds {
		if err := cmd.Wait(); err != nil {
			panic(strings.Join(cmd.Args, " ") + ": " + err.Error() + "\n" + outs[i].String())
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
	if err := initRepo(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// initRepo makes dir a git repository with one commit on main.
func initRepo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v\n%s", args, err, out)
		}
	}
	return nil
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

// hangAgent is an agent block (command "hang") that commits a file, prints
// "started" and sleeps: a run to interrupt or break mid-iteration.
const hangAgent = `agent "command" "hang" {
  command = ["sh", "-c", "echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -qm work && echo started && exec sleep 1000"]
}
`

// commitAgent is a scripted agent: it reads the prompt, commits a file and
// prints the completion signal.
const commitAgent = `["sh", "-c", "cat > prompt.txt && git add prompt.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: save prompt' && echo '<promise>COMPLETE</promise>'"]`

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
	cmd, stderr := startUntil(t, t.TempDir(), 1, dir, "run")
	plugins := pluginProcesses(t, cmd.Process.Pid)
	if len(plugins) == 0 {
		t.Fatal("no plugin processes found while the run was going")
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
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
		if err != nil || !strings.HasPrefix(string(cmdline), filepath.Join(filepath.Dir(sanddune), "sanddune-plugin-")) {
			continue
		}
		if parentOf(e.Name()) == parent {
			pids = append(pids, pid)
		}
	}
	return pids
}

// parentOf is the parent of process pid, 0 when it cannot be read.
func parentOf(pid string) int {
	// /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces.
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	var state string
	var ppid int
	fmt.Sscan(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), &state, &ppid)
	return ppid
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
	want := "name,branch,commits,completion_signal,iterations,stdout,output,log_file,preserved_worktree_path,patch_path,egress_denied,egress_refused,steps,token_budgets,error,skipped"
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
