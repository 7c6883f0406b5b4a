//go:build !linux

package kittest

import "syscall"

// asNobody runs a child as nobody.
func asNobody() *syscall.SysProcAttr { return &syscall.SysProcAttr{Credential: nobody} }
