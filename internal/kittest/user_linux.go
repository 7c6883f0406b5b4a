package kittest

import "syscall"

// asNobody runs a child as nobody, killed with its parent.
func asNobody() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: nobody, Pdeathsig: syscall.SIGKILL}
}
