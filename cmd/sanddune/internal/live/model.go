// Package live is `sanddune run`'s live view on a terminal: one line per
// run (its phase, iteration, elapsed time, tokens and the agent's latest
// line), grouped by pipeline in plan order, redrawn in place below what
// the runs print. It is fed the runs' phase, agent and sandbox events;
// Frame renders a state at a width, so it is tested without a terminal.
package live

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

// Run is a planned run as the view lists it before it starts. A run
// with ForEach is a block whose instances are known at run time only
// (Name is the block's): its line stands for them until they start.
type Run = core.PlannedRun

// row is one line of the view.
type row struct {
	Run
	phase      core.Phase
	iteration  int
	started    time.Time // the first phase after waiting
	ended      time.Time
	tokens     int64 // finished iterations
	iterTokens int64 // the current iteration's, so far
	last       string
	queued     bool // the sandbox provider reports waiting in its queue
	failed     bool
	cancelled  bool
	commits    int
	branch     string
}

// model is the view's state; View guards it.
type model struct {
	rows     []*row
	byName   map[string]*row
	stopping bool
	frame    int // spinner frame
}

func newModel(runs []Run) *model {
	m := &model{byName: map[string]*row{}}
	for _, r := range runs {
		m.add(r)
	}
	return m
}

func (m *model) add(r Run) *row {
	rw := &row{Run: r}
	// A for_each instance goes after its block's other lines.
	at := len(m.rows)
	for i, o := range m.rows {
		if o.Block != "" && o.Block == r.Block {
			at = i + 1
		}
	}
	m.rows = append(m.rows[:at], append([]*row{rw}, m.rows[at:]...)...)
	m.byName[r.Name] = rw
	return rw
}

// get is the row of run name, made when the run is not in the plan.
func (m *model) get(name string) *row {
	if rw := m.byName[name]; rw != nil {
		return rw
	}
	return m.add(Run{Name: name})
}

// rowOf is the row of e's run. A for_each instance planned at run time
// (first seen waiting, with its block and key) gets its block's line but
// for its name, in its block's place.
func (m *model) rowOf(e core.PhaseEvent) *row {
	if rw := m.byName[e.Run]; rw != nil || e.Block == "" {
		return m.get(e.Run)
	}
	r := Run{Name: e.Run}
	for _, o := range m.rows {
		if o.ForEach != "" && o.Block == e.Block {
			r = o.Run
			r.Name, r.Key, r.ForEach = e.Run, e.Key, ""
		}
	}
	return m.add(r)
}

func (m *model) phase(e core.PhaseEvent) {
	rw := m.rowOf(e)
	rw.phase, rw.queued = e.Phase, false
	if e.MaxIterations > 0 {
		rw.MaxIterations = e.MaxIterations
	}
	if e.Phase != core.PhaseWaiting && rw.started.IsZero() {
		rw.started = e.Time
	}
	if e.Phase == core.PhaseAgent {
		rw.iteration, rw.iterTokens = e.Iteration, 0
	}
	if e.Usage != nil {
		rw.tokens, rw.iterTokens = core.Tokens(e.Usage), 0
	}
	if e.Branch != "" {
		rw.branch = e.Branch
	}
	if e.Phase == core.PhaseDone {
		rw.iteration, rw.ended = e.Iteration, e.Time
		rw.failed, rw.cancelled, rw.commits = e.Failed, e.Cancelled, e.Commits
		if rw.started.IsZero() {
			rw.started = e.Time
		}
	}
}

func (m *model) event(e core.AgentEvent) {
	rw := m.get(e.Run)
	ev := e.Event
	switch ev.Type {
	case sdk.EventUsage:
		if ev.Usage != nil {
			rw.iterTokens = core.Tokens(ev.Usage)
		}
	case sdk.EventToolCall:
		rw.last = "→ " + ev.ToolName + "(" + ev.ToolArg + ")"
	case sdk.EventText, sdk.EventResult, sdk.EventWarning, sdk.EventError:
		if l := lastLine(ev.Text); l != "" {
			rw.last = l
		}
	}
}

func (m *model) progress(p core.SandboxProgress) {
	rw := m.get(p.Run)
	rw.queued = p.Waiting
	if l := lastLine(p.Message); l != "" {
		rw.last = l
	}
}

// lastLine is the last non-blank line of s, without escapes or control
// characters.
func lastLine(s string) string {
	lines := strings.Split(ansi.Strip(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, lines[i])
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// Tokens is a token count as 950, 12.3k or 2.1M; "-" for none.
func Tokens(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// Elapsed is a duration as 42s, 3m05s or 1h02m.
func Elapsed(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
