package procgroup

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestKillMarkedKillsTheTreeAndNothingElse: a process carrying the exact
// entry dies, and so does its child that cleared its environment; a
// process whose environment merely contains the entry's text (another
// name, another value) lives.
func TestKillMarkedKillsTheTreeAndNothingElse(t *testing.T) {
	t.Parallel()
	entry := "SANDDUNE_TEST_TREE=" + strconv.Itoa(os.Getpid())
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "env -i sleep 300 & exec sleep 300")
		cmd.Env = append(env, "PATH=/usr/bin:/bin")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	tree := start(entry)
	bystanders := []*exec.Cmd{start("X" + entry), start(entry + "0"), start("Y=" + entry)}
	for len(children(tree.Process.Pid)) == 0 {
		time.Sleep(time.Millisecond)
	}
	child := children(tree.Process.Pid)[0]
	if err := KillMarked(entry); err != nil {
		t.Fatal(err)
	}
	tree.Wait()
	if _, _, ok := stat(child); ok {
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		t.Errorf("the marked process's unmarked child %d survived: %s", child, stat)
	}
	for _, b := range bystanders {
		if _, _, ok := stat(b.Process.Pid); !ok {
			t.Errorf("bystander with env %q was killed", b.Env[0])
		}
	}
}

// TestKillMarkedReachesOlderProcesses: KillMarked, unlike KillOwnMarked,
// kills marked processes older than its caller (a dead run's leftovers,
// found by gc): the caller here is a helper process started after them.
func TestKillMarkedReachesOlderProcesses(t *testing.T) {
	if m := os.Getenv("PROCGROUP_TEST_KILL_MARKED"); m != "" {
		if err := KillMarked(m); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	marker := "PROCGROUP_TEST_OLD=" + strconv.Itoa(os.Getpid())
	old := exec.Command("sleep", "60")
	old.Env = append(os.Environ(), marker)
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestKillMarkedReachesOlderProcesses$")
	helper.Env = append(os.Environ(), "PROCGROUP_TEST_KILL_MARKED="+marker)
	if out, err := helper.CombinedOutput(); err != nil {
		_ = old.Process.Kill()
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if err := old.Wait(); err == nil {
		t.Error("the marked process older than KillMarked's caller survived")
	}
}

func children(pid int) []int {
	var out []int
	procs, _ := readProcs(0)
	for p, pr := range procs {
		if pr.ppid == pid {
			out = append(out, p)
		}
	}
	return out
}
