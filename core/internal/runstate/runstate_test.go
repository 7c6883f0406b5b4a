package runstate

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestListSkipsAndSweepRemovesTheStateOfDeadProcesses: a state file of a
// live process is listed (with what was written last); one of a process
// that is gone is not, and Sweep removes it but not the live one.
func TestListSkipsAndSweepRemovesTheStateOfDeadProcesses(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "a-1.json")
	gone := filepath.Join(dir, "b-1.json")
	now := time.Now().UTC().Round(time.Second)
	for _, s := range []struct {
		path string
		st   State
	}{
		{live, State{Run: "a", PID: os.Getpid(), Host: host, Started: now, Phase: "worktree"}},
		{live, State{Run: "a", PID: os.Getpid(), Host: host, Started: now, Phase: "agent", Iteration: 2, MaxIterations: 3}},
		{gone, State{Run: "b", PID: dead.Process.Pid, Host: host, Started: now, Phase: "agent"}},
	} {
		if err := Write(s.path, s.st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Run != "a" || got[0].Phase != "agent" || got[0].Iteration != 2 || !got[0].Started.Equal(now) {
		t.Fatalf("listed %+v", got)
	}
	Sweep(dir)
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("the dead process's state is left: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "a-1.json" {
		t.Fatalf("left in the directory: %v (no temporary files either)", ents)
	}
}

// TestListOfNoDirectoryIsEmpty: a repository no run ever ran in.
func TestListOfNoDirectoryIsEmpty(t *testing.T) {
	got, err := List(filepath.Join(t.TempDir(), "runs"))
	if err != nil || len(got) != 0 {
		t.Fatalf("%v %v", got, err)
	}
}
