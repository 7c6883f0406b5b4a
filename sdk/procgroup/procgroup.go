//go:build unix

// Package procgroup starts commands as leaders of their own process group
// and kills whole groups: the one way sanddune and its plugins stop a
// command together with everything it started.
package procgroup

import "syscall"

// Attr returns the SysProcAttr of a command that leads a new process group
// and, where the OS has a parent-death signal (Linux), is SIGKILLed when
// the thread that started it exits: lock that thread (runtime.LockOSThread)
// until the command ends.
func Attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(a)
	return a
}

// Kill SIGKILLs every process of group pgid.
func Kill(pgid int) error {
	if pgid <= 0 {
		return syscall.EINVAL
	}
	return syscall.Kill(-pgid, syscall.SIGKILL)
}

// alive reports whether process pid exists (it may be a zombie).
func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH }
