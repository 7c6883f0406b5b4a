package bubblewrap

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestZZDebugKeeper(t *testing.T) {
	bw, _ := exec.LookPath("bwrap")
	k, err := startKeeper(bw)
	if err != nil {
		t.Fatal(err)
	}
	defer k.stop()
	for _, f := range []*os.File{k.ownerNS, k.userNS, k.pidNS} {
		if f == nil {
			t.Log("nil")
			continue
		}
		l, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		t.Log(f.Name(), l)
	}
	args, _ := k.joinArgs()
	t.Log(args)
	for i := 0; i < 5; i++ {
		nsArgs, files := k.joinArgs()
		cmd := exec.Command(bw, append(append(nsArgs, namespaceArgs(false)...), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "id", "-u")...)
		cmd.ExtraFiles = files
		out, err := cmd.CombinedOutput()
		t.Logf("%s %v", out, err)
	}
}
