package core

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/missingstudio/sanddune/core/internal/runstate"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
)

// RunState is a run in progress as its sanddune process records it in
// .sanddune/runs (`sanddune status`).
type RunState = run.State

// RunsInProgress lists the runs in progress in the repository holding dir
// (of every sanddune process working in it), by start time, and that
// repository's root.
func RunsInProgress(ctx context.Context, dir string) ([]RunState, string, error) {
	repo, err := worktree.Open(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	states, err := RunStates(repo.Root)
	return states, repo.Root, err
}

// RunStates lists the runs in progress in the repository whose root is
// root, as RunsInProgress does, without asking git where that is.
func RunStates(root string) ([]RunState, error) {
	return runstate.List(filepath.Join(root, worktree.StateDirName, runstate.DirName))
}

// RunLogs lists the log files in .sanddune/logs of run (a run's name),
// of the repository whose root is root, oldest first.
func RunLogs(root, run string) ([]string, error) {
	dir := filepath.Join(root, worktree.StateDirName, "logs")
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(worktree.SanitizeName(run)) + `-(\d{8}-\d{6})-[0-9a-f]+\.log$`)
	type logFile struct{ path, stamp string }
	var logs []logFile
	for _, e := range ents {
		if m := re.FindStringSubmatch(e.Name()); m != nil && !e.IsDir() {
			logs = append(logs, logFile{filepath.Join(dir, e.Name()), m[1]})
		}
	}
	sort.SliceStable(logs, func(i, j int) bool { return logs[i].stamp < logs[j].stamp })
	out := make([]string, len(logs))
	for i, l := range logs {
		out[i] = l.path
	}
	return out, nil
}
