package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/internal/kittest"
)

// testImage is the local image .ci/run builds (debootstrap minbase + git).
func testImage() string {
	if img := os.Getenv("SANDDUNE_TEST_IMAGE"); img != "" {
		return img
	}
	return "sanddune-test-base:bookworm"
}

// requireDocker stops the test when the daemon or the test image is
// missing: a failure in CI, a loud skip elsewhere.
func requireDocker(t *testing.T) {
	t.Helper()
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", testImage()).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("docker or the image %s is not available (run scripts/ci-setup.sh as root): %v: %s", testImage(), err, bytes.TrimSpace(out))
	}
	kittest.RequireEngine(t, "docker", err)
}

// containers lists the containers of sanddune runs on the repo dir (not
// those of other tests sharing the daemon).
func containers(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=sanddune.repo="+dir).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestDockerRunLandsCommitsForEveryStrategy: runsLandCommits in docker.
func TestDockerRunLandsCommitsForEveryStrategy(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	runsLandCommits(t, `sandbox "docker" "default" {
  image = "`+testImage()+`"
}`, containers)
}

// runsLandCommits runs the scripted agent in the sandbox block with each
// branch strategy, two of them concurrently, and checks where the commits
// land, that the agent's file belongs to the host user, and that
// containers (of the repo) lists none afterwards.
func runsLandCommits(t *testing.T, sandbox string, containers func(*testing.T, string) []string) {
	t.Helper()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), sandbox+`
agent "command" "script" {
  command = `+commitAgent+`
}
run "head" {
  prompt          = "into head"
  branch_strategy = { type = "head" }
}
run "merge" {
  prompt          = "via a temp branch"
  branch_strategy = { type = "merge-to-head" }
}
run "named" {
  prompt          = "onto a named branch"
  branch_strategy = { type = "branch", branch = "agent/named" }
}
run "other" {
  prompt          = "onto another branch"
  branch_strategy = { type = "branch", branch = "agent/other" }
}
`)
	before := gitOut(t, dir, "rev-parse", "main")
	r := run(t, dir, "run", "--json", "head")
	if r.code != 0 {
		t.Fatalf("head: exit %d\n%s", r.code, r.stderr)
	}
	if got := gitOut(t, dir, "rev-list", "--count", before+"..main"); got != "1" {
		t.Fatalf("head: %s new commits on main, want 1", got)
	}
	fi, err := os.Stat(filepath.Join(dir, "prompt.txt"))
	if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Getuid() {
		t.Fatalf("the agent's file in the host repo: %v, want owned by uid %d", err, os.Getuid())
	}
	r = run(t, dir, "run", "--json", "merge")
	if r.code != 0 {
		t.Fatalf("merge-to-head: exit %d\n%s", r.code, r.stderr)
	}
	if got := gitOut(t, dir, "show", "main:prompt.txt"); got != "via a temp branch" {
		t.Fatalf("merge-to-head: main:prompt.txt = %q", got)
	}
	r = run(t, dir, "run", "--json", "-p", "2", "named", "other")
	if r.code != 0 {
		t.Fatalf("concurrent branch runs: exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Runs []struct {
			Branch  string
			Commits []struct{ SHA string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Runs) != 2 {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	for i, b := range []string{"agent/named", "agent/other"} {
		if doc.Runs[i].Branch != b || len(doc.Runs[i].Commits) != 1 || gitOut(t, dir, "rev-parse", b) != doc.Runs[i].Commits[0].SHA {
			t.Errorf("run %d: %+v, want one commit at the tip of %s", i, doc.Runs[i], b)
		}
	}
	if st := gitOut(t, dir, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("host working tree changed: %q", st)
	}
	if c := containers(t, dir); len(c) != 0 {
		t.Errorf("containers left behind: %v", c)
	}
}

// TestDockerInterruptLeavesNoContainer: interruptLeavesNoContainer in docker.
func TestDockerInterruptLeavesNoContainer(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	interruptLeavesNoContainer(t, `sandbox "docker" "default" {
  image = "`+testImage()+`"
}`, containers, nil)
}

// interruptLeavesNoContainer interrupts a run whose agent hangs in the
// sandbox block: exit 130, containers (of the repo) lists none, the branch
// keeps the commit the agent made before hanging. running, if set, is
// called with the container while the agent runs, and returns a check
// for after the interrupt.
func interruptLeavesNoContainer(t *testing.T, sandbox string, containers func(*testing.T, string) []string, running func(id string) (after func())) {
	t.Helper()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), sandbox+`
`+hangAgent+`run "hang" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/hang" }
  logging {
    type = "stdout"
  }
}
`)
	cmd, stderr := startUntil(t, t.TempDir(), 1, dir, "run")
	ids := containers(t, dir)
	if len(ids) != 1 {
		t.Fatalf("containers while the agent runs: %v", ids)
	}
	after := func() {}
	if running != nil {
		after = running(ids[0])
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	if c := containers(t, dir); len(c) != 0 {
		t.Fatalf("containers left behind: %v", c)
	}
	after()
	if got := gitOut(t, dir, "show", "agent/hang:work.txt"); got != "work" {
		t.Fatalf("the agent's commit was lost: %q", got)
	}
}

// TestDockerSandboxRemovedFromOutside: the container is removed (docker rm
// -f) while the agent runs: the run fails saying the sandbox disappeared,
// against the sandbox, not as the agent's exit code 137; the commit is kept
// and the next step is to run again.
func TestDockerSandboxRemovedFromOutside(t *testing.T) {
	requireDocker(t)
	dir := gitRepo(t)
	name := fmt.Sprintf("gone-%d", os.Getpid())
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "docker" "default" {
  image = "`+testImage()+`"
}
`+hangAgent+`run "`+name+`" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/gone" }
  logging {
    type = "stdout"
  }
}
`)
	cmd := sandduneCmd(dir, "run")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	for sc.Scan() && !strings.Contains(sc.Text(), "started") {
		out.WriteString(sc.Text() + "\n")
	}
	ps, err := exec.Command("docker", "ps", "--filter", "label=sanddune.run", "--format", `{{.ID}} {{.Label "sanddune.run"}}`).Output()
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, l := range strings.Split(string(ps), "\n") {
		if id, run, ok := strings.Cut(l, " "); ok && strings.HasPrefix(run, name+"-") {
			if b, err := exec.Command("docker", "rm", "-f", id).CombinedOutput(); err != nil {
				t.Fatalf("docker rm -f: %v %s", err, b)
			}
			removed++
		}
	}
	if removed != 1 {
		t.Fatalf("%d containers of run %s, want 1", removed, name)
	}
	go func() {
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	msg := stderr.String()
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(msg, "the sandbox disappeared") || !strings.Contains(msg, "[sandbox.docker.default]") ||
		!strings.Contains(msg, "from outside sanddune") || strings.Contains(msg, "agent exited with code") ||
		!strings.Contains(msg, "1 commit(s) kept on branch agent/gone") || !strings.Contains(msg, "run again to continue in a new sandbox") {
		t.Fatalf("exit %v, want 1 saying the sandbox disappeared, where the work is and to run again:\n%s", err, msg)
	}
	if got := gitOut(t, dir, "show", "agent/gone:work.txt"); got != "work" {
		t.Fatalf("the agent's commit was lost: %q", got)
	}
}

// builtinsPID is the pid of the process serving the built-ins of sanddune
// process parent, or 0: the sanddune file itself (so both share its pages),
// run as sanddune-plugin-builtins.
func builtinsPID(parent int) int {
	self, _ := filepath.EvalSymlinks(sanddune)
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		b, err := os.ReadFile(c)
		if err != nil || !bytes.HasSuffix(b, []byte("/"+builtinsBinary+"\x00")) {
			continue
		}
		if exe, _ := os.Readlink(filepath.Join(filepath.Dir(c), "exe")); exe != self {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(c)))
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 {
				if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(parent) {
					return pid
				}
			}
		}
	}
	return 0
}

// TestSandboxPluginKilledIsCleanedUp: the docker (or bubblewrap) plugin,
// the built-ins' process, which serves the agent too, is SIGKILLed while
// the agent runs. The run fails against the sandbox plugin (the agent
// plugin died with it) and says it died; sanddune restarts the plugin and removes the run's
// sandbox through it before it exits, and says so; no process of the
// sandbox (the agent's) outlives the run, and the agent's commit is on
// the run's branch (ADR 0016).
func TestSandboxPluginKilledIsCleanedUp(t *testing.T) {
	for _, tc := range []struct {
		plugin, block string
		require       func(t *testing.T)
		// procs are the host pids of the sandbox's processes.
		procs func(t *testing.T, id string, plugin int) []int
		// id finds the run's sandbox while it runs; gone says it is gone.
		id   func(t *testing.T, dir string) string
		gone func(id string) bool
	}{{
		plugin: "docker", block: `sandbox "docker" "default" { image = "` + testImage() + `" }`,
		require: requireDocker,
		procs: func(t *testing.T, id string, _ int) []int {
			top, err := exec.Command("docker", "top", id, "-o", "pid").Output()
			if err != nil {
				t.Fatal(err)
			}
			var pids []int
			for _, f := range strings.Fields(string(top))[1:] {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			return pids
		},
		id: func(t *testing.T, dir string) string {
			out, _ := exec.Command("docker", "ps", "-aq", "--no-trunc", "--filter", "label=sanddune.repo="+dir).Output()
			if ids := strings.Fields(string(out)); len(ids) == 1 {
				return ids[0]
			}
			return ""
		},
		gone: func(id string) bool { return exec.Command("docker", "inspect", id).Run() != nil },
	}, {
		plugin: "bubblewrap", block: `sandbox "bubblewrap" "default" {}`,
		require: func(t *testing.T) {
			_, err := exec.LookPath("bwrap")
			kittest.RequireEngine(t, "bubblewrap", err)
		},
		procs: func(_ *testing.T, _ string, plugin int) []int { return descendants(plugin) },
		id: func(t *testing.T, dir string) string {
			if ids := bwrapSandboxes(t, dir); len(ids) > 0 {
				return ids[0]
			}
			return ""
		},
		gone: func(id string) bool {
			_, err := os.Stat(id)
			return errors.Is(err, os.ErrNotExist)
		},
	}} {
		t.Run(tc.plugin, func(t *testing.T) {
			tc.require(t)
			dir := gitRepo(t)
			t.Cleanup(func() {
				for _, id := range containers(t, dir) {
					exec.Command("docker", "rm", "-f", id).Run()
				}
			})
			writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), tc.block+`
`+hangAgent+`run "killed" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/killed" }
  logging {
    type = "stdout"
  }
}
`)
			cmd := sandduneCmd(dir, "run")
			stdout, stderr := startScanning(t, cmd, 1)
			defer cmd.Process.Kill()
			go io.Copy(io.Discard, stdout)
			pid := builtinsPID(cmd.Process.Pid)
			if pid == 0 {
				t.Fatalf("no %s plugin process while the agent runs", tc.plugin)
			}
			id := tc.id(t, dir)
			procs := tc.procs(t, id, pid)
			if id == "" || len(procs) == 0 {
				t.Fatalf("no process in sandbox %s while the agent runs", id)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			msg := stderr.String()
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(msg, "[sandbox."+tc.plugin+".default]") ||
				!strings.Contains(msg, "plugin process exited") ||
				!strings.Contains(msg, "the sandbox plugin died; sanddune restarted it and removed sandbox "+id+" with anything still running in it") ||
				!strings.Contains(msg, "1 commit(s) kept on branch agent/killed") {
				t.Fatalf("exit %v, want 1 naming the sandbox plugin, saying it died and that sandbox %s was removed, and the branch:\n%s", err, id, msg)
			}
			if !tc.gone(id) {
				t.Errorf("sandbox %s left after sanddune exited", id)
			}
			for _, p := range procs {
				if processAlive(p) {
					t.Errorf("process %d of the sandbox (the agent's) outlived the run", p)
				}
			}
			if got := gitOut(t, dir, "show", "agent/killed:work.txt"); got != "work" {
				t.Fatalf("the agent's commit was lost: %q", got)
			}
		})
	}
}

// descendants are the processes below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			pp := parentOf(e.Name())
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// TestDockerInterruptWhileTheDaemonAnswersLate: Ctrl-C once the daemon has
// made the run's container but before its answer to the create arrives (a
// proxy holds it). The docker plugin still waits for that answer when
// sanddune stops it, beyond its 2 s of shutdown grace, so it is killed
// before it could remove the container; sanddune starts it again and
// removes the container through it before it exits (ADR 0016).
func TestDockerInterruptWhileTheDaemonAnswersLate(t *testing.T) {
	requireDocker(t)
	dir := gitRepo(t)
	t.Cleanup(func() {
		for _, id := range containers(t, dir) {
			exec.Command("docker", "rm", "-f", id).Run()
		}
	})
	created := make(chan struct{})
	proxy := containerkittest.HoldCreates(t, created, nil)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "docker" "default" {
  image = "`+testImage()+`"
}
agent "command" "a" {
  command = ["true"]
}
run "late" {
  prompt = "hi"
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, "DOCKER_HOST="+proxy)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-created:
	case err := <-exited:
		t.Fatalf("sanddune exited (%v) before the daemon made the container:\n%s", err, out.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130:\n%s", err, out.String())
	}
	if c := containers(t, dir); len(c) != 0 {
		t.Fatalf("containers of the run left after sanddune exited: %v\n%s", c, out.String())
	}
	if !strings.Contains(out.String(), "its plugin was killed before it had shut down") {
		t.Fatalf("sanddune does not say it removed the container through the plugin restarted:\n%s", out.String())
	}
}

// TestDockerValidatePreflight: validate --preflight asks the real daemon
// what a run would (a missing image is named with how to build it), and
// passes with the test image, leaving no container.
func TestDockerValidatePreflight(t *testing.T) {
	requireDocker(t)
	dir := gitRepo(t)
	cfg := func(image string) {
		writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "docker" "default" {
  image = "`+image+`"
}
agent "command" "a" {
  command = ["true"]
}
run "r" {
  prompt = "x"
}
`)
	}
	missing := fmt.Sprintf("sanddune-no-such-image:%d", os.Getpid())
	cfg(missing)
	if r := run(t, dir, "validate"); r.code != 0 {
		t.Fatalf("validate without --preflight: exit %d: %s", r.code, r.stderr)
	}
	r := run(t, dir, "validate", "--preflight")
	if r.code != 1 || !strings.Contains(r.stderr, `image "`+missing+`" not found`) || !strings.Contains(r.stderr, "build-image") {
		t.Errorf("missing image: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	cfg(testImage())
	r = run(t, dir, "validate", "--preflight")
	if r.code != 0 || !strings.Contains(r.stdout, "preflight checks passed") {
		t.Errorf("test image: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if left := containers(t, dir); len(left) > 0 {
		t.Errorf("preflight left containers %v", left)
	}
}
