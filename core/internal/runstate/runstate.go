// Package runstate is the state file a running sanddune keeps for each of
// its runs in progress, .sanddune/runs/<run>-<stamp>.json, for `sanddune
// status`: the run, its process, its phase and iteration, its branch and
// its log. The file is replaced atomically at each phase and removed when
// the run ends; one whose process is gone (killed) is stale: List skips
// it and Sweep removes it.
package runstate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/missingstudio/sanddune/core/internal/proc"
	"github.com/missingstudio/sanddune/core/run"
)

// DirName is the state directory's subdirectory of the run state files.
const DirName = "runs"

// State is a run in progress (run.State, which package core names too).
type State = run.State

// Write replaces the state file path with s: a temporary file renamed
// over it, so a reader sees the old state or the new one, whole.
func Write(path string, s State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// List reads the state files in dir, of the runs whose process lives, by
// start time. A missing dir is no runs.
func List(dir string) ([]State, error) {
	var out []State
	err := each(dir, func(_ string, s State, live bool) {
		if live {
			out = append(out, s)
		}
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, err
}

// Sweep removes the stale state files in dir (their process is gone).
func Sweep(dir string) {
	each(dir, func(path string, _ State, live bool) {
		if !live {
			os.Remove(path)
		}
	})
}

// each calls f with every state file of dir and whether its process
// lives on this host (a file of another host counts as live).
func each(dir string, f func(path string, s State, live bool)) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue // removed meanwhile: the run ended
		}
		var s State
		if json.Unmarshal(b, &s) != nil || s.PID <= 0 {
			continue
		}
		f(path, s, s.Host != host || !proc.Gone(s.PID))
	}
	return nil
}
