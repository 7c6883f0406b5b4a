package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit/kittest"
)

// detach starts, from inside sb, a process that leaves the command's
// process group (setsid) and outlives it; script may change how it looks
// (cd elsewhere, clear its env). It returns the process's pid.
func detach(t *testing.T, sb sdk.Sandbox, prefix string) int {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The command waits for the pid: its end kills its process group.
	cmd := "(" + prefix + " setsid sh -c 'echo $$ > " + pidFile + ".new && mv " + pidFile + ".new " + pidFile + "; exec sleep 300' >/dev/null 2>&1 &)" +
		"; while [ ! -s " + pidFile + " ]; do sleep 0.01; done"
	if res, _ := kittest.Exec(t, sb, sdk.ExecRequest{Shell: cmd}); res.ExitCode != 0 {
		t.Fatalf("%s: exit %d", cmd, res.ExitCode)
	}
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: pid %q", cmd, b)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("%s: the detached process did not outlive its command", cmd)
	}
	return pid
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !zombie("/proc/"+strconv.Itoa(pid))
}

// TestDetachedProcessesDieWithTheSandbox: a daemon an agent started with
// setsid does not survive the sandbox's Close, even one that cleared its
// environment (found by its working directory).
func TestDetachedProcessesDieWithTheSandbox(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	pids := []int{detach(t, sb, "cd / &&"), detach(t, sb, "exec env -i PATH=/usr/bin:/bin")}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d survived the sandbox", pid)
		}
	}
}

// TestGCKillsWhatADeadRunLeftRunning: when sanddune was killed, its agent
// may still run in the sandbox; gc's Recover stops it before salvaging
// and RemoveResource before removing. Other processes are left alone.
func TestGCKillsWhatADeadRunLeftRunning(t *testing.T) {
	t.Parallel()
	p := New().(*Provider)
	for _, gc := range []func(id string) error{
		func(id string) error { _, err := p.Recover(context.Background(), id); return err },
		func(id string) error { return p.RemoveResource(context.Background(), id) },
	} {
		sb := newTestSandbox(t, nil)
		pid := detach(t, sb, "")
		bystander := exec.Command("sleep", "300")
		if err := bystander.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
		if err := gc(sb.Info().ID); err != nil {
			t.Fatal(err)
		}
		if alive(pid) {
			t.Errorf("gc left process %d of a dead run running", pid)
		}
		if !alive(bystander.Process.Pid) {
			t.Errorf("gc killed an unrelated process")
		}
	}
}
