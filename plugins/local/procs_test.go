//go:build linux

package local

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

// detach starts, from inside sb, a process that leaves the command's
// process group and outlives it: daemon is a command line that starts
// the shell script $PIDSLEEP somehow (cd elsewhere, setsid, clear its env),
// which writes its pid and sleeps. It returns that pid.
func detach(t *testing.T, sb sdk.Sandbox, daemon string) int {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "pidsleep")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho $$ > "+pidFile+".new && mv "+pidFile+".new "+pidFile+"; exec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The command waits for the pid: its end kills its process group.
	cmd := "(" + daemon + " >/dev/null 2>&1 &); while [ ! -s " + pidFile + " ]; do sleep 0.01; done"
	if res, _ := kittest.Exec(t, sb, sdk.ExecRequest{Shell: cmd, Env: map[string]string{"PIDSLEEP": script}}); res.ExitCode != 0 {
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

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(b, ')')
	return err == nil && i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestDetachedProcessesDieWithTheSandbox: a daemon an agent started with
// setsid does not survive the sandbox's Close, nor does a child of such a
// daemon that cleared its environment (it descends from a marked process).
func TestDetachedProcessesDieWithTheSandbox(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	pids := []int{
		detach(t, sb, `cd / && setsid "$PIDSLEEP"`),
		detach(t, sb, `setsid sh -c 'env -i "$PIDSLEEP" & wait'`),
	}
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
		func(id string) error { _, err := p.Recover(context.Background(), sdk.Config{}, id); return err },
		func(id string) error { return p.RemoveResource(context.Background(), sdk.Config{}, id) },
	} {
		sb := newTestSandbox(t, nil)
		pid := detach(t, sb, `setsid "$PIDSLEEP"`)
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

// TestCloseSparesUnrelatedProcessesInTheSandboxDir: a process that merely
// works in the sandbox directory (a shell someone opened there, a daemon
// that was started from there) but neither descends from the sandbox nor
// carries its marker survives Close and gc: the provider runs as you,
// often as root, and must never kill by place.
func TestCloseSparesUnrelatedProcessesInTheSandboxDir(t *testing.T) {
	t.Parallel()
	p := New().(*Provider)
	for _, end := range []func(sb sdk.Sandbox) error{
		func(sb sdk.Sandbox) error { return sb.Close(context.Background()) },
		func(sb sdk.Sandbox) error {
			_, err := p.Recover(context.Background(), sdk.Config{}, sb.Info().ID)
			return err
		},
		func(sb sdk.Sandbox) error { return p.RemoveResource(context.Background(), sdk.Config{}, sb.Info().ID) },
	} {
		sb := newTestSandbox(t, nil)
		bystander := exec.Command("sleep", "300")
		bystander.Dir = sb.Info().RepoPath
		// An env that names the sandbox, but not as the marker entry.
		bystander.Env = []string{"NOT_" + markerEnv + "=" + sb.Info().ID, "X=" + markerEnv + "=" + sb.Info().ID}
		if err := bystander.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
		pid := detach(t, sb, `setsid "$PIDSLEEP"`)
		if err := end(sb); err != nil {
			t.Fatal(err)
		}
		if !alive(bystander.Process.Pid) {
			t.Errorf("a process working in the sandbox dir but not of the sandbox was killed")
		}
		if alive(pid) {
			t.Errorf("the sandbox's own daemon %d survived", pid)
		}
	}
}
