package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/run"
)

// recorder runs named runs, recording the order they start in; a run
// named in fail fails.
type recorder struct {
	mu      sync.Mutex
	started []string
	fail    map[string]bool
}

func (rec *recorder) runs() Runs[string] {
	return Runs[string]{
		Name: func(r string) string { return r },
		Key:  func(r string) (string, cty.Value) { return r, cty.StringVal(r) },
		Run: func(ctx context.Context, r string) (*run.Result, error) {
			rec.mu.Lock()
			rec.started = append(rec.started, r)
			rec.mu.Unlock()
			if rec.fail[r] {
				return nil, errors.New("failed")
			}
			return &run.Result{Name: r}, nil
		},
	}
}

func nodesOf(labels ...string) []*Node[string] {
	var out []*Node[string]
	for _, l := range labels {
		out = append(out, &Node[string]{Label: l, Addr: "run." + l, Runs: []string{l}})
	}
	return out
}

// TestRunsStartInFileOrder: one at a time, independent runs start in the
// order of the file, every time.
func TestRunsStartInFileOrder(t *testing.T) {
	want := []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"}
	for range 50 {
		rec := &recorder{}
		Execute(context.Background(), nodesOf(want...), 1, rec.runs())
		if !slices.Equal(rec.started, want) {
			t.Fatalf("started %v, want %v", rec.started, want)
		}
	}
}

// TestPipelineLimitKeepsOrderAcrossPipelines: with two places and a
// pipeline of max_parallel 1, the pipeline's runs go one at a time in
// their order, and the other runs take the second place in theirs.
func TestPipelineLimitKeepsOrderAcrossPipelines(t *testing.T) {
	p := &config.PipelineBlock{MaxParallel: 1}
	nodes := nodesOf("p1", "p2", "p3", "a", "b")
	for _, n := range nodes[:3] {
		n.Pipeline = p
	}
	var mu sync.Mutex
	running, most := map[*config.PipelineBlock]int{}, 0
	rec := &recorder{}
	rs := rec.runs()
	inner := rs.Run
	// a gets the second place at the start, b only once a place frees. Two
	// places granted at once start concurrently, so p1 holds its place
	// until a has started: else a goroutine the machine is slow to
	// schedule lets p1..p3 and b run before a records its start.
	aStarted := make(chan struct{})
	rs.Run = func(ctx context.Context, r string) (*run.Result, error) {
		mu.Lock()
		if r[0] == 'p' {
			running[p]++
			most = max(most, running[p])
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			if r[0] == 'p' {
				running[p]--
			}
			mu.Unlock()
		}()
		res, err := inner(ctx, r)
		switch r {
		case "a":
			close(aStarted)
		case "p1":
			<-aStarted
		}
		return res, err
	}
	out := Execute(context.Background(), nodes, 2, rs)
	if most != 1 {
		t.Errorf("%d runs of a max_parallel 1 pipeline ran at once", most)
	}
	var pipeline, others []string
	for _, s := range rec.started {
		if s[0] == 'p' {
			pipeline = append(pipeline, s)
		} else {
			others = append(others, s)
		}
	}
	if !slices.Equal(pipeline, []string{"p1", "p2", "p3"}) || !slices.Equal(others, []string{"a", "b"}) {
		t.Errorf("started %v", rec.started)
	}
	if len(out) != 5 {
		t.Errorf("%d outcomes, want 5", len(out))
	}
}

// TestFailedNeedSkipsDependents: a run whose need failed is skipped with
// the reason; an independent run still runs.
func TestFailedNeedSkipsDependents(t *testing.T) {
	nodes := nodesOf("a", "b", "c")
	nodes[1].Needs = []*Node[string]{nodes[0]}
	rec := &recorder{fail: map[string]bool{"a": true}}
	out := Execute(context.Background(), nodes, 2, rec.runs())
	got := fmt.Sprintf("%v|%q|%v", out[0].Err != nil, out[1].Skipped, out[2].Err)
	if want := `true|"run.a did not succeed"|<nil>`; got != want {
		t.Errorf("outcomes %s, want %s", got, want)
	}
	if slices.Contains(rec.started, "b") {
		t.Errorf("b started although a failed: %v", rec.started)
	}
}

// TestCancelledRunsDoNotWaitForPlaces: once ctx ends, waiting runs go at
// once (and fail on the cancelled context) rather than wait for the place
// a run still holds.
func TestCancelledRunsDoNotWaitForPlaces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	others := make(chan string, 2)
	rs := Runs[string]{
		Name: func(r string) string { return r },
		Key:  func(r string) (string, cty.Value) { return r, cty.StringVal(r) },
		Run: func(ctx context.Context, r string) (*run.Result, error) {
			if r == "first" { // holds the only place until the others ran (or the test times out)
				cancel()
				<-others
				<-others
			} else {
				others <- r
			}
			return nil, ctx.Err()
		},
	}
	for _, o := range Execute(ctx, nodesOf("first", "second", "third"), 1, rs) {
		if !errors.Is(o.Err, context.Canceled) {
			t.Errorf("%s: %v, want cancelled", o.Name, o.Err)
		}
	}
}
