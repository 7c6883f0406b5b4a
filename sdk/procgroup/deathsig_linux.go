package procgroup

import "syscall"

// setDeathSignal makes the command SIGKILLed when the thread that started
// it exits.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
