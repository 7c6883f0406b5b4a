package live

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/missingstudio/sanddune/core"
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Column widths; a line narrower than wideFrom drops the tokens and the
// agent's line.
const (
	maxName   = 28
	phaseCols = 20
	timeCols  = 6
	tokenCols = 6
	wideFrom  = 64
)

// Frame renders the view at now for a terminal width columns wide and
// height rows high: every line fits the width (one column spare, so
// nothing wraps), and at most height-1 lines (finished runs are folded
// first, then the rest is cut).
func (m *model) Frame(now time.Time, width, height int) []string {
	nameW := 0
	for _, rw := range m.visible() {
		nameW = max(nameW, ansi.StringWidth(rw.label()))
	}
	nameW = min(nameW, maxName)
	var lines []string
	group := "\x00"
	for _, rw := range m.visible() {
		if rw.Pipeline != group {
			group = rw.Pipeline
			if group != "" {
				lines = append(lines, "pipeline "+group)
			}
		}
		lines = append(lines, m.line(rw, now, width, nameW))
	}
	if m.stopping {
		lines = append(lines, "stopping: each run saves its work (commits, uncommitted changes) before it ends; Ctrl-C again does not cut that short")
	}
	if height > 1 && len(lines) > height-1 {
		lines = fold(lines, m, height-1)
	}
	for i, l := range lines {
		lines[i] = fit(l, width)
	}
	return lines
}

// fold keeps the first n-1 lines and says how many more there are.
func fold(lines []string, m *model, n int) []string {
	done := 0
	for _, rw := range m.rows {
		if !rw.ended.IsZero() {
			done++
		}
	}
	more := fmt.Sprintf("… %d more line(s) (%d run(s) done); sanddune status lists the runs in progress", len(lines)-(n-1), done)
	return append(lines[:n-1:n-1], more)
}

// visible are the rows shown: a for_each block's line only until its
// instances appear.
func (m *model) visible() []*row {
	var out []*row
	for _, rw := range m.rows {
		if rw.ForEach != "" && m.hasInstances(rw.Block) {
			continue
		}
		out = append(out, rw)
	}
	return out
}

func (m *model) hasInstances(block string) bool {
	for _, rw := range m.rows {
		if rw.Block == block && rw.ForEach == "" {
			return true
		}
	}
	return false
}

// label is a run's name, with its for_each key when the name does not
// say it.
func (rw *row) label() string {
	if rw.Key != "" && !strings.Contains(rw.Name, rw.Key) {
		return rw.Name + " [" + rw.Key + "]"
	}
	return rw.Name
}

// line is one run's line: icon, name, phase, elapsed, tokens and the
// agent's latest line (or, once done, the run's summary).
func (m *model) line(rw *row, now time.Time, width, nameW int) string {
	icon, phase, note := m.state(rw)
	el := ""
	if !rw.started.IsZero() {
		end := now
		if !rw.ended.IsZero() {
			end = rw.ended
		}
		el = Elapsed(end.Sub(rw.started))
	}
	s := fmt.Sprintf("  %s %s  %s %*s", icon, pad(rw.label(), nameW), pad(phase, phaseCols), timeCols, el)
	if width < wideFrom {
		return s
	}
	s += fmt.Sprintf("  %*s", tokenCols, Tokens(rw.tokens+rw.iterTokens))
	if note != "" {
		s += "  " + note
	}
	return s
}

// state is a row's icon, phase and note (the agent's latest line, or
// what the run is waiting for, saving, or ended with).
func (m *model) state(rw *row) (icon, phase, note string) {
	spin := spinner[m.frame%len(spinner)]
	if !rw.ended.IsZero() {
		sum := fmt.Sprintf("%d iteration(s), %d commit(s)", rw.iteration, rw.commits)
		if rw.branch != "" {
			sum += " on " + rw.branch
		}
		switch {
		case rw.cancelled:
			return "✗", "cancelled", sum + " kept"
		case rw.failed:
			return "✗", "failed", sum + " kept (error below)"
		}
		return "✓", "done", sum
	}
	if rw.phase == "" || rw.phase == core.PhaseWaiting {
		if m.stopping {
			return "·", "not started", ""
		}
		if need, failed := m.pendingNeed(rw); need != "" {
			if failed {
				return "-", "skipped", need + " did not succeed"
			}
			if rw.ForEach != "" {
				return "·", "waiting", "planned once " + need + " is done"
			}
			return "·", "waiting", "after " + need
		}
		if rw.ForEach != "" {
			return spin, "planning", ""
		}
		return "·", "waiting for a slot", ""
	}
	phase = phaseLabel(rw)
	if m.stopping {
		return spin, "stopping", saving(rw.phase)
	}
	return spin, phase, rw.last
}

// pendingNeed is the first run rw needs that has not ended, or that
// failed.
func (m *model) pendingNeed(rw *row) (need string, failed bool) {
	for _, n := range rw.DependsOn {
		block := strings.TrimPrefix(n, "run.")
		seen, ended := false, true
		for _, o := range m.rows {
			if o.Block == block || o.Name == block && o.Block == "" {
				seen = true
				if o.ended.IsZero() {
					ended = false
				} else if o.failed {
					return n, true
				}
			}
		}
		if !seen || !ended {
			return n, false
		}
	}
	return "", false
}

func phaseLabel(rw *row) string {
	switch rw.phase {
	case core.PhaseWorktree:
		return "preparing worktree"
	case core.PhaseMerge:
		return "merging"
	case core.PhaseSandbox:
		if rw.queued {
			return "sandbox queued"
		}
		return "creating sandbox"
	case core.PhaseSyncIn:
		return "syncing in"
	case core.PhaseHooks:
		return "running hooks"
	case core.PhaseAgent:
		return fmt.Sprintf("iteration %d/%d", rw.iteration, rw.MaxIterations)
	case core.PhaseSyncOut:
		return "syncing out"
	case core.PhaseCleanup:
		return "cleaning up"
	}
	return string(rw.phase)
}

// saving says what a run stopping in phase does with its work.
func saving(phase core.Phase) string {
	switch phase {
	case core.PhaseSyncOut:
		return "saving: bringing the sandbox's commits home, uncommitted work as a patch"
	case core.PhaseMerge:
		return "saving: merging its commits"
	case core.PhaseCleanup:
		return "saving: keeping uncommitted work in its worktree"
	case core.PhaseAgent, core.PhaseHooks:
		return "stopping the agent; then saving its commits and uncommitted work"
	}
	return "undoing its setup"
}

func pad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return ansi.Truncate(s, w, "…")
}

// fit cuts s to width-1 columns (the last column stays free: a line that
// fills it wraps on some terminals).
func fit(s string, width int) string {
	if width < 2 {
		return ""
	}
	return strings.TrimRight(ansi.Truncate(s, width-1, "…"), " ")
}
