package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestGoneSeesAZombie: a child that exited but was not waited for is gone;
// a running one is not, nor is this process.
func TestGoneSeesAZombie(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: zombies are not told apart here")
	}
	if Gone(os.Getpid()) {
		t.Fatal("this process is gone")
	}
	running := exec.Command("sleep", "60")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer running.Wait()
	defer running.Process.Kill()
	if Gone(running.Process.Pid) {
		t.Fatal("a running child is gone")
	}
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	// Not waited for: a zombie once it exits.
	for i := 0; !Gone(dead.Process.Pid); i++ {
		if i > 1000 {
			t.Fatal("an exited child not waited for is not gone")
		}
		time.Sleep(10 * time.Millisecond)
	}
	dead.Wait()
	if !Gone(dead.Process.Pid) {
		t.Fatal("a reaped child is not gone")
	}
}
