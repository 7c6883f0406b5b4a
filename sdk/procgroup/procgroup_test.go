package procgroup

import (
	"bufio"
	"io"
	"os/exec"
	"testing"
)

// TestKillEndsTheWholeGroup: a shell and the sleep it started in the
// background both die when their group is killed. The sleep holds the
// stdout pipe, so the pipe reaches EOF only once it is dead too.
func TestKillEndsTheWholeGroup(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo started; wait")
	cmd.SysProcAttr = Attr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if err := Kill(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if alive(cmd.Process.Pid) {
		t.Fatal("the group leader survived")
	}
}

func TestKillRefusesOurOwnGroup(t *testing.T) {
	t.Parallel()
	if Kill(0) == nil {
		t.Fatal("Kill(0) would signal our own group; it must be refused")
	}
}
