// Package proc tells whether a process that labelled a resource or holds a
// lock is gone.
package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Gone reports whether process pid has exited: it no longer exists, or it
// is a zombie (dead, not yet waited for by its parent, as a SIGKILLed
// sanddune is until the shell that started it reaps it).
func Gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat") // Linux; elsewhere no zombie check
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')' (comm may hold any byte).
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
