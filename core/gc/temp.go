package gc

import (
	"os"
	"path/filepath"

	"github.com/missingstudio/sanddune/core/internal/proc"
	"github.com/missingstudio/sanddune/core/internal/tempdir"
)

// SweptTemp is what Run did (or would do) with one temporary directory
// of a dead sanddune process.
type SweptTemp struct {
	Path string
	PID  int
	// Action is "removed", "would remove" or "kept (<error>)".
	Action string
}

// sweepTemp removes the temporary directories of sanddune processes that
// have exited; a directory whose name does not carry a dead sanddune's
// pid is never touched. With dryRun nothing changes.
func sweepTemp(dryRun bool) ([]SweptTemp, error) {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return nil, err
	}
	var out []SweptTemp
	for _, e := range entries {
		pid, ok := tempdir.Owner(e.Name())
		if !ok || !e.IsDir() || !proc.Gone(pid) {
			continue
		}
		s := SweptTemp{Path: filepath.Join(os.TempDir(), e.Name()), PID: pid, Action: "would remove"}
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
