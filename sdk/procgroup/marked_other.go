//go:build unix && !linux

package procgroup

// KillMarked does nothing where there is no /proc to find the processes
// that left a command's process group: there, only the group is killed.
func KillMarked(string) error { return nil }

// KillOwnMarked is KillMarked: it does nothing here.
func KillOwnMarked(string) error { return nil }
