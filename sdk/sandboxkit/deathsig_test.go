package sandboxkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// TestCommandDiesWithThePlugin: when the plugin process is SIGKILLed (as
// when sanddune itself is killed), the command it ran is killed too rather
// than running on as an orphan.
func TestCommandDiesWithThePlugin(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "cmd.pid")
	plugin := exec.Command(os.Args[0], "-test.run=^TestHelperRunnerProcess$")
	plugin.Env = append(os.Environ(), "SANDBOXKIT_HELPER_PIDFILE="+pidFile)
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	deadline := time.Now().Add(10 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		plugin.Process.Kill()
		t.Fatal("the helper's command did not start")
	}
	plugin.Process.Kill()
	plugin.Wait()
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("command %d outlived its plugin", pid)
}

// TestHelperRunnerProcess plays the plugin for TestCommandDiesWithThePlugin.
func TestHelperRunnerProcess(t *testing.T) {
	pidFile := os.Getenv("SANDBOXKIT_HELPER_PIDFILE")
	if pidFile == "" {
		t.Skip("helper process only")
	}
	var r Runner
	r.Run(context.Background(), Command{
		Argv: []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 1000"},
		Env:  map[string]string{"PATH": os.Getenv("PATH")},
	}, func(sdk.OutputLine) {})
}
