package main

import (
	"bufio"
	"bytes"
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
	"time"

	"github.com/missingstudio/sanddune/core/gc"
)

// killedRun starts run "orphan" with agent script in dir, waits until the
// agent prints "started", and kills sanddune outright (no cleanup at all).
// The agent writes its pid to the sandbox directory; its process group is
// killed when the test ends. It returns the orphaned sandbox directory.
func killedRun(t *testing.T, dir, tmp, script string) string {
	t.Helper()
	cmd, sandbox := killedUnreaped(t, dir, tmp, script)
	cmd.Wait()
	return sandbox
}

// killedUnreaped is killedRun without waiting for sanddune: until the
// caller does, the killed process is a zombie.
func killedUnreaped(t *testing.T, dir, tmp, script string) (*exec.Cmd, string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "hang" {
  command = ["sh", "-c", "echo $$ > ../agent.pid; `+script+` echo started; exec sleep 1000"]
}
run "orphan" {
  prompt  = "wait"
  logging {
    type = "stdout"
  }
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "started") {
	}
	go io.Copy(io.Discard, stdout)
	cmd.Process.Signal(syscall.SIGKILL)
	sandboxes, _ := filepath.Glob(filepath.Join(tmp, "sanddune-local-*"))
	if len(sandboxes) != 1 {
		cmd.Wait()
		t.Fatalf("want the killed run's sandbox dir left in %s, found %v", tmp, sandboxes)
	}
	// The agent may outlive sanddune; stop it so that nothing leaks.
	data, err := os.ReadFile(filepath.Join(sandboxes[0], "agent.pid"))
	if err != nil {
		cmd.Wait()
		t.Fatal(err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return cmd, sandboxes[0]
}

// signalWhenStarted runs sanddune in dir with env added, waits until its
// agent prints "started", sends sig to sanddune and returns its exit code
// (-1 when killed) and stderr.
func signalWhenStarted(t *testing.T, dir string, sig syscall.Signal, env ...string) (int, string) {
	t.Helper()
	return signalRunWhenStarted(t, dir, sig, []string{"run"}, env...)
}

// signalRunWhenStarted is signalWhenStarted running `sanddune args...`.
func signalRunWhenStarted(t *testing.T, dir string, sig syscall.Signal, args []string, env ...string) (int, string) {
	t.Helper()
	cmd := sandduneCmd(dir, args...)
	cmd.Env = append(cmd.Env, env...)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	started := false
	for !started && sc.Scan() {
		started = strings.Contains(sc.Text(), "started")
	}
	cmd.Process.Signal(sig)
	go io.Copy(io.Discard, stdout)
	cmd.Wait()
	if !started {
		t.Fatalf("the agent did not start:\n%s", stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func gcIn(dir, tmp string, args ...string) result {
	c := sandduneCmd(dir, append([]string{"gc"}, args...)...)
	c.Env = append(c.Env, "TMPDIR="+tmp)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if errors.As(err, new(*exec.ExitError)) {
		code = c.ProcessState.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

// locks lists the run lock files of the repo in dir.
func locks(t *testing.T, dir string) []string {
	t.Helper()
	l, _ := filepath.Glob(filepath.Join(dir, ".git", "sanddune", "locks", "*.lock"))
	return l
}

// tempBranches lists the temporary branches of run "orphan".
func tempBranches(t *testing.T, dir string) []string {
	t.Helper()
	return strings.Fields(gitOut(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/sanddune/orphan/"))
}

// TestGCSalvagesWhatAKilledRunLeft kills sanddune outright while the
// agent of a local (isolated) sandbox has committed and left an
// uncommitted file, then checks that `sanddune gc --dry-run` reports the
// unsynced work and changes nothing, and that `sanddune gc` brings the
// commit onto the run's branch, saves the uncommitted file as a patch, and
// only then removes the sandbox, its stale lock and nothing else.
func TestGCSalvagesWhatAKilledRunLeft(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	tmp := t.TempDir()
	base := gitOut(t, dir, "rev-parse", "main")
	sandbox := killedRun(t, dir, tmp, "echo work > work.txt && git add work.txt && "+
		"git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: work' && echo wip > wip.txt &&")
	branches := tempBranches(t, dir)
	if len(branches) != 1 || gitOut(t, dir, "rev-parse", branches[0]) != base {
		t.Fatalf("want the run's temp branch at the base, got %v", branches)
	}
	branch := branches[0]
	lockFiles := locks(t, dir)
	if len(lockFiles) == 0 {
		t.Fatal("the killed run left no lock file")
	}

	r := gcIn(dir, tmp, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would salvage from "+sandbox+" (run orphan, sandbox.local.dev): 1 commit(s) onto branch "+branch) ||
		!strings.Contains(r.stdout, "looked at: sandbox.local.dev (local, from .sanddune/sanddune.hcl), ") ||
		!strings.Contains(r.stdout, "local (defaults)") ||
		!strings.Contains(r.stdout, "uncommitted work as a patch") || !strings.Contains(r.stdout, "would remove "+sandbox) ||
		!strings.Contains(r.stdout, "agent: work") {
		t.Fatalf("gc --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(sandbox); err != nil {
		t.Fatalf("--dry-run removed the sandbox: %v", err)
	}
	if got := gitOut(t, dir, "rev-parse", branch); got != base {
		t.Errorf("--dry-run moved %s to %s", branch, got)
	}
	if got := locks(t, dir); strings.Join(got, " ") != strings.Join(lockFiles, " ") {
		t.Errorf("--dry-run changed the locks: %v, then %v", lockFiles, got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sanddune", "patches")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--dry-run wrote patches (%v)", err)
	}

	r = gcIn(dir, tmp)
	if r.code != 0 || !strings.Contains(r.stdout, "salvaged from "+sandbox) || !strings.Contains(r.stdout, "removed "+sandbox) {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := gitOut(t, dir, "show", branch+":work.txt"); got != "work" {
		t.Errorf("%s:work.txt = %q", branch, got)
	}
	if got := gitOut(t, dir, "log", "--format=%s%x09%an", base+".."+branch); got != "agent: work\tagent" {
		t.Errorf("%s holds %q beyond the base, want the agent's commit", branch, got)
	}
	patches, _ := filepath.Glob(filepath.Join(dir, ".sanddune", "patches", "orphan-*.patch"))
	if len(patches) != 1 || !strings.Contains(r.stdout, patches[0]) {
		t.Fatalf("patches %v, output:\n%s", patches, r.stdout)
	}
	if data, _ := os.ReadFile(patches[0]); !strings.Contains(string(data), "+++ b/wip.txt") {
		t.Errorf("the patch does not hold wip.txt:\n%s", data)
	}
	if _, err := os.Stat(sandbox); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("gc left the salvaged sandbox %s (%v)", sandbox, err)
	}
	if got := locks(t, dir); len(got) != 0 {
		t.Errorf("gc left lock files %v", got)
	}
	if got := tempBranches(t, dir); len(got) != 1 {
		t.Errorf("temp branches after gc: %v, want the salvaged one kept", got)
	}
	// The patch applies on the salvaged branch.
	gitOut(t, dir, "switch", "--quiet", branch)
	gitOut(t, dir, "apply", patches[0])
	if data, err := os.ReadFile(filepath.Join(dir, "wip.txt")); err != nil || string(data) != "wip\n" {
		t.Errorf("wip.txt after git apply: %q, %v", data, err)
	}
}

// TestGCRemovesWhatAKilledRunLeft: a killed run whose agent did nothing
// leaves a sandbox with nothing to salvage, a lock and an empty temp
// branch; gc removes all three.
func TestGCRemovesWhatAKilledRunLeft(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	tmp := t.TempDir()
	sandbox := killedRun(t, dir, tmp, "")
	live := filepath.Join(tmp, "sanddune-sync-"+strconv.Itoa(os.Getpid())+"-1") // a live process's
	other := filepath.Join(tmp, "plugin12345")                                  // another program's
	for _, d := range []string{live, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	branches := tempBranches(t, dir)
	if len(branches) != 1 || len(locks(t, dir)) == 0 {
		t.Fatalf("want a temp branch and a lock left, got %v, %v", branches, locks(t, dir))
	}
	r := gcIn(dir, tmp, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "would remove "+sandbox) || strings.Contains(r.stdout, "salvage") ||
		!strings.Contains(r.stdout, "branch "+branches[0]+": would delete") {
		t.Fatalf("gc --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = gcIn(dir, tmp)
	if r.code != 0 || !strings.Contains(r.stdout, "removed "+sandbox) || !strings.Contains(r.stdout, "branch "+branches[0]+": deleted") {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(sandbox); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("gc left the orphaned sandbox %s (%v)", sandbox, err)
	}
	if got := tempBranches(t, dir); len(got) != 0 {
		t.Errorf("gc left the empty temp branch: %v", got)
	}
	if got := locks(t, dir); len(got) != 0 {
		t.Errorf("gc left lock files %v", got)
	}
	left, _ := os.ReadDir(tmp)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if want := []string{filepath.Base(other), filepath.Base(live)}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("temp dir after gc: %v, want only %v", names, want)
	}
}

const agentCommits = "echo work > work.txt && git add work.txt && " +
	"git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: work' &&"

// TestGCRecoversFromAKilledSyncOut: sanddune killed during its sync out
// leaves the bundle and git's lock on it in the sandbox's git dir; gc
// still salvages the commits.
func TestGCRecoversFromAKilledSyncOut(t *testing.T) {
	dir := gitRepo(t)
	tmp := t.TempDir()
	sandbox := killedRun(t, dir, tmp, agentCommits+" echo half > .git/sanddune-out.bundle.lock && echo half > .git/sanddune-out.bundle &&"+
		" echo x > .git/sanddune-out.index.lock &&")
	branch := tempBranches(t, dir)[0]
	for i := 0; i < 2; i++ { // a second gc finds nothing left
		r := gcIn(dir, tmp)
		if r.code != 0 || i == 0 && (!strings.Contains(r.stdout, "salvaged from "+sandbox) || !strings.Contains(r.stdout, "removed "+sandbox)) {
			t.Fatalf("gc #%d: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
		}
	}
	if got := gitOut(t, dir, "log", "--format=%s", "main.."+branch); got != "agent: work" {
		t.Errorf("%s holds %q beyond the base, want the agent's commit", branch, got)
	}
}

// TestGCNeverReportsASalvageThatFailed: when the sync out fails, gc keeps
// the sandbox, says what it holds, does not claim to have salvaged it,
// and exits 1.
func TestGCNeverReportsASalvageThatFailed(t *testing.T) {
	dir := gitRepo(t)
	tmp := t.TempDir()
	sandbox := killedRun(t, dir, tmp, agentCommits+" mkdir -p .git/sanddune-out.bundle/x &&") // a bundle path gc cannot use
	branch := tempBranches(t, dir)[0]
	r := gcIn(dir, tmp)
	if r.code != 1 || strings.Contains(r.stdout, "salvaged") || !strings.Contains(r.stdout, "kept "+sandbox) ||
		!strings.Contains(r.stdout, "salvaging its work failed") || !strings.Contains(r.stdout, "holds 1 commit(s) not on the host") {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := gitOut(t, dir, "rev-parse", branch); got != gitOut(t, dir, "rev-parse", "main") {
		t.Errorf("branch moved to %s", got)
	}
	if _, err := os.Stat(sandbox); err != nil {
		t.Errorf("the sandbox holding the only copy is gone: %v", err)
	}
}

// gc says so when there is nothing to clean up, rather than print nothing;
// it says nothing of the kind when it did something. (A sanddune gc run
// here would see the shared docker daemon's orphans of other test runs.)
func TestGCSaysWhenNothingIsLeft(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if printGC(&out, gc.Report{}, false, false) || out.String() != "nothing to clean up\n" {
		t.Fatalf("empty report printed %q", out.String())
	}
	out.Reset()
	printGC(&out, gc.Report{Temp: []gc.SweptTemp{{Path: "/tmp/sanddune-sync-1-x", PID: 1, Action: "removed"}}}, false, false)
	if strings.Contains(out.String(), "nothing") || !strings.Contains(out.String(), "/tmp/sanddune-sync-1-x") {
		t.Fatalf("report with a temp dir printed %q", out.String())
	}
}

// TestGCSeesARunKilledButNotYetReaped: a sanddune killed with SIGKILL
// whose parent has not waited for it yet (a zombie, as under a script that
// reaps later) is gone: gc removes what it left at once.
func TestGCSeesARunKilledButNotYetReaped(t *testing.T) {
	t.Parallel()
	dir, tmp := gitRepo(t), t.TempDir()
	cmd, sandbox := killedUnreaped(t, dir, tmp, "")
	defer cmd.Wait()    // reaped only after gc ran
	for i := 0; ; i++ { // the kernel makes it a zombie a moment after the signal
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			t.Skip("no /proc here")
		}
		if j := bytes.LastIndexByte(stat, ')'); j > 0 && stat[j+2] == 'Z' {
			break
		}
		if i > 500 {
			t.Fatalf("sanddune is not a zombie: %s", stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := gcIn(dir, tmp); r.code != 0 || !strings.Contains(r.stdout, "removed "+sandbox) {
		t.Fatalf("gc beside the unreaped run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestGCLeavesOtherRepositoriesAlone: gc in one repository leaves the
// orphaned sandbox of a dead run on another one, and says so; with
// --all-repos it collects it, naming that repository.
func TestGCLeavesOtherRepositoriesAlone(t *testing.T) {
	t.Parallel()
	dir, other := gitRepo(t), gitRepo(t)
	tmp := t.TempDir()
	sandbox := killedRun(t, dir, tmp, "")
	writeFile(t, filepath.Join(other, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}`+"\n")
	r := gcIn(other, tmp)
	if r.code != 0 || strings.Contains(r.stdout, sandbox) ||
		!strings.Contains(r.stdout, "1 sandbox(es) of dead runs on other repositories left alone (sanddune gc --all-repos collects them too)") {
		t.Fatalf("gc in another repository: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(sandbox); err != nil {
		t.Fatalf("gc in another repository removed %s: %v", sandbox, err)
	}
	r = gcIn(other, tmp, "--all-repos")
	if r.code != 0 || !strings.Contains(r.stdout, "removed "+sandbox+" (run orphan, sandbox.local.dev, repository "+dir+")") {
		t.Fatalf("gc --all-repos: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
