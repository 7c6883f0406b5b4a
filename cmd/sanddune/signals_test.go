package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// localRunConfig is a local-sandbox run whose agent runs script, then
// says "started" and sleeps.
func localRunConfig(script string) string {
	return `sandbox "local" "dev" {}
agent "command" "hang" {
  command = ["sh", "-c", "` + script + ` echo started; exec sleep 1000"]
}
run "sig" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/sig" }
  logging {
    type = "stdout"
  }
}
`
}

// hasChild reports whether process pid has a child process.
func hasChild(pid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				return true
			}
		}
	}
	return false
}

// assertNothingLeft checks that an interrupted run left no worktree, lock,
// temp dir or sandbox behind.
func assertNothingLeft(t *testing.T, dir, tmp string) {
	t.Helper()
	if l := locks(t, dir); len(l) != 0 {
		t.Errorf("locks left: %v", l)
	}
	if wt, _ := filepath.Glob(filepath.Join(dir, ".sanddune", "worktrees", "*")); len(wt) != 0 {
		t.Errorf("worktrees left: %v", wt)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("temp dir not empty: %v", names)
	}
}

// TestEarlyInterruptIsCancelled interrupts runs at moments spread over
// the start (plugins loading, config checks, preflight, setup): every one
// exits 130 saying it was cancelled, never a config, repo or preflight
// error, and leaves nothing behind.
func TestEarlyInterruptIsCancelled(t *testing.T) {
	t.Parallel()
	for _, delay := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			t.Parallel() // each its own repository and TMPDIR: the waits overlap
			dir := gitRepo(t)
			tmp := t.TempDir()
			writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), localRunConfig(""))
			cmd := sandduneCmd(dir, "run")
			cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for !hasChild(cmd.Process.Pid) { // it handles signals before it starts plugins
				time.Sleep(time.Millisecond)
			}
			time.Sleep(delay)
			cmd.Process.Signal(os.Interrupt)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(out.String(), "cancelled") {
				t.Fatalf("interrupt after %v: %v, want exit 130 and cancelled\n%s", delay, err, out.String())
			}
			for _, bad := range []string{"has errors", "failed", "no commits", "not inside a git"} {
				if strings.Contains(out.String(), bad) {
					t.Errorf("interrupt after %v reported %q:\n%s", delay, bad, out.String())
				}
			}
			assertNothingLeft(t, dir, tmp)
		})
	}
}

// startRun starts run "sig" and waits until its agent says "started".
func startRun(t *testing.T, dir, tmp, script string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), localRunConfig(script))
	return startUntil(t, tmp, 1, dir, "run")
}

// startUntil starts sanddune args in dir with TMPDIR tmp and waits until
// its output has said "started" n times (n agents are at work).
func startUntil(t *testing.T, tmp string, n int, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := sandduneCmd(dir, args...)
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	stdout, stderr := startScanning(t, cmd, n)
	go io.Copy(io.Discard, stdout)
	return cmd, stderr
}

// startScanning starts cmd and reads its stdout until n lines said
// "started"; it returns the rest of stdout and what goes to stderr.
func startScanning(t *testing.T, cmd *exec.Cmd, n int) (io.ReadCloser, *bytes.Buffer) {
	t.Helper()
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
	for started := 0; started < n && sc.Scan(); {
		if strings.Contains(sc.Text(), "started") {
			started++
		}
	}
	return stdout, &stderr
}

// TestHangupAndDoubleInterruptKeepTheWork: SIGHUP (the terminal closed)
// tears the run down like SIGTERM, and a second Ctrl-C right after the
// first does not abandon the sync out: exit 130, the agent's commit is on
// the branch, nothing is left behind.
func TestHangupAndDoubleInterruptKeepTheWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals []os.Signal
	}{
		{"SIGHUP", []os.Signal{syscall.SIGHUP}},
		{"double Ctrl-C", []os.Signal{os.Interrupt, os.Interrupt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitRepo(t)
			tmp := t.TempDir()
			cmd, stderr := startRun(t, dir, tmp, "echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -qm work &&")
			for _, s := range tc.signals {
				cmd.Process.Signal(s)
				time.Sleep(20 * time.Millisecond)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
			}
			if got := gitOut(t, dir, "show", "agent/sig:work.txt"); got != "work" {
				t.Fatalf("the agent's commit was lost: %q", got)
			}
			if len(tc.signals) > 1 && !strings.Contains(stderr.String(), "press Ctrl-C again to abandon") {
				t.Errorf("the second Ctrl-C was not answered:\n%s", stderr.String())
			}
			assertNothingLeft(t, dir, tmp)
		})
	}
}

// TestSignalAtStartIsCancelled: SIGINT, SIGTERM or SIGHUP right after the
// signals are caught, long before the gRPC, docker and kubernetes packages
// have initialised (GODEBUG=inittrace=1 shows the moment), ends a run with
// exit 130 "cancelled" and nothing left, never the runtime's 143 or 129.
func TestSignalAtStartIsCancelled(t *testing.T) {
	const caught = "init github.com/missingstudio/sanddune/cmd/sanddune/internal/interrupts "
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		dir := gitRepo(t)
		tmp := t.TempDir()
		writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), localRunConfig(""))
		cmd := sandduneCmd(dir, "run")
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "GODEBUG=inittrace=1")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			switch {
			case strings.HasPrefix(line, caught) && !sent:
				cmd.Process.Signal(sig)
				sent = true
			case !sent && (strings.HasPrefix(line, "init github.com/missingstudio/sanddune/") || strings.HasPrefix(line, "init google.golang.org/grpc ")):
				t.Errorf("%s initialised before the signals were caught", strings.Fields(line)[1])
			}
		}
		if !sent {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%v: the signals are not caught at start\n%s", sig, out.String())
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(out.String(), "cancelled") {
			t.Fatalf("%v at start: %v, want exit 130 and cancelled\n%s", sig, err, out.String())
		}
		assertNothingLeft(t, dir, tmp)
	}
}

// TestPipelineInterruptKeepsEveryRunsWork: Ctrl-C during a pipeline stops
// both runs in flight, each keeping its commit on its branch, and starts
// none of the runs that wait for them: exit 130, nothing left behind.
func TestPipelineInterruptKeepsEveryRunsWork(t *testing.T) {
	dir := gitRepo(t)
	tmp := t.TempDir()
	// The agent commits <prompt>.txt, says "started" and waits.
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "work" {
  command = ["sh", "-c", "f=$(cat) && echo $f > $f.txt && git add $f.txt && git -c user.name=a -c user.email=a@example.com commit -qm $f && echo started; exec sleep 1000"]
}
agent "command" "after" {
  command = ["sh", "-c", "echo after > after.txt"]
}
run "a" {
  agent           = agent.command.work
  prompt          = "a"
  branch_strategy = { type = "branch", branch = "agent/a" }
  logging {
    type = "stdout"
  }
}
run "b" {
  agent           = agent.command.work
  prompt          = "b"
  branch_strategy = { type = "branch", branch = "agent/b" }
  logging {
    type = "stdout"
  }
}
run "after" {
  agent           = agent.command.after
  prompt          = "x"
  depends_on      = [run.a, run.b]
  branch_strategy = { type = "branch", branch = "agent/after" }
}
pipeline "both" {
  runs         = [run.a, run.b, run.after]
  max_parallel = 2
}
`)
	cmd, stderr := startUntil(t, tmp, 2, dir, "run", "both")
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	for _, r := range []string{"a", "b"} {
		if got := gitOut(t, dir, "show", "agent/"+r+":"+r+".txt"); got != r {
			t.Errorf("run %s lost its commit: %q", r, got)
		}
	}
	if exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", "agent/after").Run() == nil {
		t.Errorf("run after started although the runs it waits for were interrupted\n%s", stderr.String())
	}
	assertNothingLeft(t, dir, tmp)
}

// TestClosedOutputPipeDoesNotKillTheRun: `sanddune run | head -1` closes
// sanddune's stdout mid-run. The next write raises SIGPIPE, which must not
// kill sanddune without its teardown: the run goes on and ends as usual,
// its commit on the branch and nothing left behind.
func TestClosedOutputPipeDoesNotKillTheRun(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	tmp := t.TempDir()
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "talk" {
  command = ["sh", "-c", "echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -qm work && echo started && for i in 1 2 3 4 5 6 7 8 9 10; do echo more; sleep 0.1; done; echo '<promise>COMPLETE</promise>'"]
}
run "pipe" {
  prompt          = "talk"
  branch_strategy = { type = "branch", branch = "agent/pipe" }
  logging {
    type = "stdout"
  }
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	stdout, stderr := startScanning(t, cmd, 1)
	stdout.Close() // like head -1 exiting
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit %v, want 0 (the run ends as usual)\n%s", err, stderr.String())
	}
	if got := gitOut(t, dir, "show", "agent/pipe:work.txt"); got != "work" {
		t.Fatalf("the agent's commit is not on the branch: %q", got)
	}
	assertNothingLeft(t, dir, tmp)
}

// TestInterruptDuringTheMergeSaysSoAndExits130: Ctrl-C while a finished
// run's commits are being merged lets the merge finish (the work is never
// cut in half), says at once that the work is being saved, and exits 130
// once it is: the signal is never silently swallowed into exit 0. A git
// wrapper holds the merge's fast-forward until the test has signalled.
func TestInterruptDuringTheMergeSaysSoAndExits130(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	tmp, bin, marks := t.TempDir(), t.TempDir(), t.TempDir()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bin, "git"), `#!/bin/sh
case " $* " in
*" merge --ff-only "*)
  if [ -e "`+marks+`/agent-done" ] && mkdir "`+marks+`/held" 2>/dev/null; then
    i=0
    while [ ! -e "`+marks+`/release" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
  fi;;
esac
exec `+real+` "$@"
`)
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["sh", "-c", "echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -qm work && touch `+marks+`/agent-done && echo '<promise>COMPLETE</promise>'"]
}
run "m" {
  prompt          = "work"
  branch_strategy = { type = "merge-to-head" }
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(marks, "held")); err == nil {
			break
		}
		if i > 2000 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the merge never started:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	for i := 0; !strings.Contains(stderr.String(), "saving its work"); i++ {
		if i > 500 {
			t.Errorf("no word that the signal was received and the work is being saved:\n%s", stderr.String())
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	writeFile(t, filepath.Join(marks, "release"), "")
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	if got := gitOut(t, dir, "show", "HEAD:work.txt"); got != "work" {
		t.Fatalf("the agent's commit was not merged: %q\n%s", got, stderr.String())
	}
	assertNothingLeft(t, dir, tmp)
}

// TestInterruptedHeadRunSaysWhereTheWorkIs: Ctrl-C on a head run (the
// agent works in your checkout) says that what it did not commit is in
// the checkout, where it stays.
func TestInterruptedHeadRunSaysWhereTheWorkIs(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "bubblewrap" "b" {}
agent "command" "wip" {
  command = ["sh", "-c", "echo draft > wip.txt; echo started; exec sleep 1000"]
}
run "h" {
  prompt          = "x"
  branch_strategy = "head"
  logging {
    type = "stdout"
  }
}
`)
	cmd, stderr := startUntil(t, t.TempDir(), 1, dir, "run")
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "what it did not commit is there (git status)") {
		t.Errorf("the cancellation does not say where the uncommitted work is:\n%s", stderr.String())
	}
	if got := gitOut(t, dir, "status", "--porcelain", "wip.txt"); got != "?? wip.txt" {
		t.Errorf("the agent's file in the checkout: %q", got)
	}
}
