// Package tempdir makes sanddune's temporary directories, named after the
// process that owns them, and removes those whose owner is dead:
// `$TMPDIR/sanddune-<kind>-<pid>-<random>`. A killed sanddune cannot clean
// up after itself, so `sanddune gc` calls Sweep; a directory whose name
// does not carry a dead sanddune's pid is never touched.
package tempdir

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// Make creates a new temporary directory of kind (e.g. "sync") owned by
// this process.
func Make(kind string) (string, error) {
	return os.MkdirTemp("", "sanddune-"+kind+"-"+strconv.Itoa(os.Getpid())+"-")
}

var nameRE = regexp.MustCompile(`^sanddune-([a-z]+)-([0-9]+)-[0-9]+$`)

// Swept is what Sweep did (or would do) with one directory.
type Swept struct {
	Path string
	PID  int
	// Action is "removed", "would remove" or "kept (<error>)".
	Action string
}

// Sweep removes the temporary directories made by Make in processes that
// have exited. With dryRun nothing changes.
func Sweep(dryRun bool) ([]Swept, error) {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return nil, err
	}
	var out []Swept
	for _, e := range entries {
		m := nameRE.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		s := Swept{Path: filepath.Join(os.TempDir(), e.Name()), PID: pid, Action: "would remove"}
		if !dryRun {
			s.Action = "removed"
			if err := os.RemoveAll(s.Path); err != nil {
				s.Action = "kept (" + err.Error() + ")"
			}
		}
		out = append(out, s)
	}
	return out, nil
}
