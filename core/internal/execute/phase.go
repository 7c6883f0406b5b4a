package execute

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/missingstudio/sanddune/core/internal/runstate"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
)

// enter records that the run entered phase (at iteration n of the agent,
// 0 outside the loop): in its state file (`sanddune status`) and to the
// OnPhase observer.
func (r *runner) enter(phase run.Phase, n int) {
	r.phaseMu.Lock()
	defer r.phaseMu.Unlock()
	e := r.phaseEvent(phase, n)
	if r.statePath != "" {
		if err := runstate.Write(r.statePath, runstate.State{
			Run: r.name, PID: os.Getpid(), Host: r.host, Started: r.start, Phase: string(phase),
			Iteration: n, MaxIterations: r.MaxIterations, Tokens: run.Tokens(e.Usage), Branch: e.Branch, Log: e.LogFile,
		}); err != nil {
			r.log.Debug("writing the run state file failed", "path", r.statePath, "error", err)
		}
	}
	notify(r.Spec, e)
}

// openState starts the run's state file in .sanddune/runs, sweeping the
// stale ones of killed runs.
func (r *runner) openState() {
	dir := r.Repo.StateDir(runstate.DirName)
	if err := worktree.EnsureIgnoredDir(dir); err != nil {
		r.log.Debug("no run state file", "error", err)
		return
	}
	runstate.Sweep(dir)
	r.host, _ = os.Hostname()
	r.statePath = filepath.Join(dir, r.runID()+".json")
}

// ended removes the run's state file.
func (r *runner) ended() {
	if r.statePath != "" {
		os.Remove(r.statePath)
	}
}

// Waiting tells s's observer that the run e names (Run, Block, Key, and
// MaxIterations: a session's steps' together) waits for its place.
func Waiting(s *Spec, e run.PhaseEvent) {
	e.Time, e.Phase = time.Now(), run.PhaseWaiting
	notify(s, e)
}

// Done tells s's observer that the run e names ended with res and err (of
// Run, or RunSession), like Waiting.
func Done(s *Spec, e run.PhaseEvent, res *run.Result, err error) {
	e.Time, e.Phase, e.Failed = time.Now(), run.PhaseDone, err != nil
	var re *run.Error
	e.Cancelled = errors.As(err, &re) && re.Cancelled
	if res != nil {
		e.Iteration, e.Usage, e.Branch, e.LogFile, e.Commits = len(res.Iterations), res.Usage(), res.Branch, res.LogFile, len(res.Commits)
	}
	notify(s, e)
}

func (r *runner) phaseEvent(phase run.Phase, n int) run.PhaseEvent {
	e := run.PhaseEvent{Run: r.name, Time: time.Now(), Phase: phase, Iteration: n, MaxIterations: r.MaxIterations}
	if r.res != nil {
		e.Usage, e.Branch, e.LogFile = r.res.Usage(), r.res.Branch, r.res.LogFile
	}
	return e
}

// notify passes e to s's observer, recovering its panic.
func notify(s *Spec, e run.PhaseEvent) {
	if s.OnPhase == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil && s.Logger != nil {
			s.Logger.Warn("phase observer panicked; event dropped", "panic", v)
		}
	}()
	s.OnPhase(e)
}
