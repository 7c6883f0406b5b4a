package live

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden frames")

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// pipelineModel is a pipeline mid-run: a planner done, its for_each
// instances at work (one in its second iteration, one queued for a
// sandbox, one waiting for a slot), a merge run waiting for them, and a
// run outside the pipeline that failed.
func pipelineModel() *model {
	m := newModel([]Run{
		{Name: "docs", Block: "docs", MaxIterations: 1},
		{Name: "plan", Block: "plan", Pipeline: "ship", MaxIterations: 1},
		{Name: "implement", Block: "implement", Pipeline: "ship", DependsOn: []string{"run.plan"}, MaxIterations: 5, ForEach: "run.plan.commits"},
		{Name: "merge", Block: "merge", Pipeline: "ship", DependsOn: []string{"run.implement"}, MaxIterations: 1},
	})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	m.phase(core.PhaseEvent{Run: "docs", Time: at(0), Phase: core.PhaseAgent, Iteration: 1, MaxIterations: 1})
	m.phase(core.PhaseEvent{Run: "docs", Time: at(30), Phase: core.PhaseDone, Iteration: 1, MaxIterations: 1, Failed: true, Branch: "agent/docs"})
	m.phase(core.PhaseEvent{Run: "plan", Time: at(0), Phase: core.PhaseWorktree, MaxIterations: 1})
	m.phase(core.PhaseEvent{Run: "plan", Time: at(62), Phase: core.PhaseDone, Iteration: 1, MaxIterations: 1, Commits: 1, Branch: "main",
		Usage: &sdk.Usage{InputTokens: 900, OutputTokens: 50}})
	for i := range 3 { // the instances line up first, with their block and key
		key := fmt.Sprint(i)
		m.phase(core.PhaseEvent{Run: "implement-" + key, Block: "implement", Key: key, Time: at(70), Phase: core.PhaseWaiting, MaxIterations: 5})
	}
	m.phase(core.PhaseEvent{Run: "implement-0", Time: at(70), Phase: core.PhaseWorktree, MaxIterations: 5})
	m.phase(core.PhaseEvent{Run: "implement-0", Time: at(80), Phase: core.PhaseAgent, Iteration: 2, MaxIterations: 5,
		Usage: &sdk.Usage{InputTokens: 10000, CacheReadInputTokens: 2000}})
	m.event(core.AgentEvent{Run: "implement-0", Iteration: 2, Event: sdk.Event{Type: sdk.EventUsage, Usage: &sdk.Usage{OutputTokens: 345}}})
	m.event(core.AgentEvent{Run: "implement-0", Iteration: 2, Event: sdk.Event{Type: sdk.EventText,
		Text: "Looking at the tests first.\n\x1b[1mRunning\x1b[0m the whole suite to see what fails before changing the parser\n"}})
	m.phase(core.PhaseEvent{Run: "implement-1", Time: at(71), Phase: core.PhaseSandbox, MaxIterations: 5})
	m.progress(core.SandboxProgress{Run: "implement-1", Progress: sdk.Progress{Waiting: true, Message: "queued behind 5 running pods"}})
	m.event(core.AgentEvent{Run: "implement-0", Iteration: 2, Event: sdk.Event{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "go test ./parser/..."}})
	return m
}

// TestLiveFrameGolden: the frames at a narrow and a wide terminal, mid-run
// and stopping (Ctrl-C), match the golden files (go test -update
// rewrites them), and no line reaches the terminal's last column.
func TestLiveFrameGolden(t *testing.T) {
	now := t0.Add(95 * time.Second)
	for _, c := range []struct {
		name     string
		stopping bool
		width    int
	}{{"narrow", false, 50}, {"wide", false, 120}, {"stopping-wide", true, 120}} {
		t.Run(c.name, func(t *testing.T) {
			m := pipelineModel()
			m.stopping = c.stopping
			lines := m.Frame(now, c.width, 40)
			for _, l := range lines {
				if w := ansi.StringWidth(l); w >= c.width {
					t.Errorf("line %d columns wide at width %d: %q", w, c.width, l)
				}
			}
			got := strings.Join(lines, "\n") + "\n"
			path := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("frame at width %d:\n%s\nwant:\n%s", c.width, got, want)
			}
		})
	}
}

// TestLiveFrameFitsTheHeight: more runs than rows fold into a last line
// that says how many more there are.
func TestLiveFrameFitsTheHeight(t *testing.T) {
	var runs []Run
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		runs = append(runs, Run{Name: n, MaxIterations: 1})
	}
	lines := newModel(runs).Frame(t0, 80, 4)
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "… 4 more line(s)") {
		t.Fatalf("%q", lines)
	}
}

// TestLiveForEachInstancesReplaceTheirBlock: a for_each block planned at
// run time shows as one line until its instances start, which then take
// its place (in its pipeline, before the runs after it) with their keys,
// whatever the instances' names (here set by the block's `name`).
func TestLiveForEachInstancesReplaceTheirBlock(t *testing.T) {
	m := newModel([]Run{
		{Name: "fan", Block: "fan", Pipeline: "p", ForEach: "run.plan.items", MaxIterations: 2},
		{Name: "after", Block: "after", Pipeline: "p", DependsOn: []string{"run.fan"}, MaxIterations: 1},
	})
	if got := m.Frame(t0, 100, 20); len(got) != 3 || !strings.Contains(got[1], "fan") || !strings.Contains(got[1], "planning") {
		t.Fatalf("before: %q", got)
	}
	m.phase(core.PhaseEvent{Run: "review-x", Block: "fan", Key: "x", Time: t0, Phase: core.PhaseWaiting, MaxIterations: 2})
	m.phase(core.PhaseEvent{Run: "review-x", Time: t0, Phase: core.PhaseAgent, Iteration: 1, MaxIterations: 2})
	got := m.Frame(t0, 100, 20)
	if len(got) != 3 || !strings.Contains(got[1], "review-x") || !strings.Contains(got[1], "iteration 1/2") || !strings.Contains(got[2], "after run.fan") {
		t.Fatalf("after: %q", got)
	}
}
