//go:build unix && !linux

package procgroup

import "syscall"

// setDeathSignal does nothing: this OS has no parent-death signal, so a
// command outlives a parent that is SIGKILLed.
func setDeathSignal(*syscall.SysProcAttr) {}
