package local

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killSandboxProcesses kills every process of this user that belongs to
// the sandbox at root: it carries the sandbox's marker in its environment
// (so a daemon that left the command's process group with setsid is still
// found) or works in the sandbox directory. It rescans until none is left,
// so that a process forking meanwhile is caught too.
func killSandboxProcesses(root string) error {
	marker := []byte(markerEnv + "=" + root + "\x00")
	uid := os.Getuid()
	for round := 0; ; round++ {
		pids := sandboxProcesses(root, marker, uid)
		if len(pids) == 0 {
			return nil
		}
		if round == 50 {
			return errors.New("processes of the sandbox keep appearing: " + joinPIDs(pids))
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(time.Duration(round) * 10 * time.Millisecond)
	}
}

// sandboxProcesses lists the live (not zombie) processes of uid that carry
// marker in their environment or whose working directory is under root.
func sandboxProcesses(root string, marker []byte, uid int) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		var st syscall.Stat_t
		if syscall.Stat(dir, &st) != nil || int(st.Uid) != uid || zombie(dir) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(dir, "environ"))
		cwd, _ := os.Readlink(filepath.Join(dir, "cwd"))
		if bytes.Contains(append(env, 0), marker) || cwd == root || strings.HasPrefix(cwd, root+"/") {
			out = append(out, pid)
		}
	}
	return out
}

// zombie reports whether the process at /proc/<pid> has exited and waits
// to be reaped.
func zombie(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

func joinPIDs(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}
