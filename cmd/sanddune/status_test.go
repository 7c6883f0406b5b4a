package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedAgent is a command agent that prints line, then waits for the file
// gate before it signals completion: a run held in flight by the test.
func gatedAgent(name, line, gate string) string {
	return `agent "command" "` + name + `" {
  command = ["sh", "-c", "cat > /dev/null; echo ` + line + `; while [ ! -f ` + gate + ` ]; do sleep 0.05; done; echo '<promise>COMPLETE</promise>'"]
}
`
}

type statusJSON struct {
	Runs []struct {
		Run           string
		PID           int
		Phase         string
		Iteration     int
		MaxIterations int `json:"max_iterations"`
		Branch        string
		Log           string
	}
}

// lockedBuffer is a bytes.Buffer written by a command while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// eventually polls cond until it holds, failing the test (with what) if
// it never does.
func eventually(t *testing.T, what func() string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what())
		}
	}
}

// TestStatusAndLogsFollowARunInFlight: while a run's agent works, a
// second `sanddune status` (another terminal) lists it with its pid,
// phase, iteration, branch and log, and `logs RUN -f` prints its log as
// it grows and stops by itself once the run has ended, with the run's
// summary. Afterwards status lists nothing and no state file is left.
func TestStatusAndLogsFollowARunInFlight(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	gate := filepath.Join(t.TempDir(), "gate")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
`+gatedAgent("slow", "working-on-it", gate)+`
run "slow" {
  agent           = agent.command.slow
  prompt          = "work"
  max_iterations  = 2
  branch_strategy = { type = "branch", branch = "agent/slow" }
}
`)
	runCmd := sandduneCmd(dir, "run")
	var runOut lockedBuffer
	runCmd.Stdout, runCmd.Stderr = &runOut, &runOut
	if err := runCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runCmd.Process.Kill(); runCmd.Wait() })

	var st statusJSON
	status := func() string { return run(t, dir, "status", "--json").stdout }
	eventually(t, status, func() bool {
		st = statusJSON{}
		json.Unmarshal([]byte(status()), &st)
		return len(st.Runs) == 1 && st.Runs[0].Phase == "agent"
	})
	s := st.Runs[0]
	if s.Run != "slow" || s.PID != runCmd.Process.Pid || s.Iteration != 1 || s.MaxIterations != 2 || s.Branch != "agent/slow" {
		t.Fatalf("status of the run in flight: %+v (pid %d)", s, runCmd.Process.Pid)
	}
	if want := filepath.Join(dir, ".sanddune/logs") + "/"; !strings.HasPrefix(s.Log, want) {
		t.Fatalf("log %q, want one in %s", s.Log, want)
	}
	table := run(t, dir, "status").stdout
	for _, want := range []string{"RUN", "PHASE", "slow", "agent", "1/2", "agent/slow", s.Log} {
		if !strings.Contains(table, want) {
			t.Fatalf("status table lacks %q:\n%s", want, table)
		}
	}

	logs := sandduneCmd(dir, "logs", "slow", "-f")
	var logOut lockedBuffer
	logs.Stdout, logs.Stderr = &logOut, &logOut
	if err := logs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Process.Kill() })
	eventually(t, logOut.String, func() bool { return strings.Contains(logOut.String(), "working-on-it") })
	if strings.Contains(logOut.String(), "run complete") {
		t.Fatalf("logs -f printed the end of a run still in flight:\n%s", logOut.String())
	}
	writeFile(t, gate, "")
	if err := logs.Wait(); err != nil {
		t.Fatalf("logs -f: %v\n%s", err, logOut.String())
	}
	if !strings.Contains(logOut.String(), "run complete") {
		t.Fatalf("logs -f stopped before the run's summary:\n%s", logOut.String())
	}
	if err := runCmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, runOut.String())
	}
	if got := run(t, dir, "status").stdout; got != "no runs in progress\n" {
		t.Fatalf("status after the run: %q", got)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".sanddune/runs/*.json"))
	if len(left) > 0 {
		t.Fatalf("state files left: %v", left)
	}
	// Without -f: the latest log, whole.
	if r := run(t, dir, "logs", "slow"); r.code != 0 || !strings.Contains(r.stdout, "working-on-it") || !strings.Contains(r.stdout, "run complete") {
		t.Fatalf("logs slow: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// -f once it ended: that log, saying it is no run in progress.
	if r := run(t, dir, "logs", "slow", "-f"); r.code != 0 || !strings.Contains(r.stdout, "run complete") || !strings.Contains(r.stderr, `run "slow" is not in progress`) {
		t.Fatalf("logs slow -f: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestStatusIgnoresTheStateOfAKilledRun: the state file of a run whose
// process is gone (killed before it could remove it) is not listed.
func TestStatusIgnoresTheStateOfAKilledRun(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	writeFile(t, filepath.Join(dir, ".sanddune/runs/gone-20260101-000000-abcdef.json"),
		`{"run":"gone","pid":`+itoa(dead.Process.Pid)+`,"host":"`+host+`","phase":"agent","iteration":1}`)
	if r := run(t, dir, "status"); r.code != 0 || r.stdout != "no runs in progress\n" {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestLogsOfAnUnknownRunSaysWhereItLooked: a usage error naming the log
// directory.
func TestLogsOfAnUnknownRunSaysWhereItLooked(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	r := run(t, dir, "logs", "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `no log of run "nope"`) || !strings.Contains(r.stderr, ".sanddune/logs") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
}
