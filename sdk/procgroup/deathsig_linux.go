package procgroup

import "syscall"

// SetDeathSignal makes the command SIGKILLed when the thread that started
// it exits.
func SetDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
