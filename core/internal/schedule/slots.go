package schedule

import (
	"context"
	"sync"

	"github.com/missingstudio/sanddune/core/config"
)

// slots hands out the places to run: at most a number of runs at once, and
// at most a pipeline's max_parallel of its runs. Of the runs waiting, the
// first in plan order (node, then instance) that fits goes first, so runs
// start in file order however their goroutines are scheduled.
type slots struct {
	mu      sync.Mutex
	free    int
	group   map[*config.PipelineBlock]int // free places per pipeline
	waiting []*ticket                     // in plan order
}

// ticket is one run's place in line.
type ticket struct {
	node, run int // plan order
	pipeline  *config.PipelineBlock
	granted   chan struct{}
}

func newSlots[R any](global int, nodes []*Node[R]) *slots {
	s := &slots{free: max(global, 1), group: map[*config.PipelineBlock]int{}}
	for _, n := range nodes {
		if p := n.Pipeline; p != nil {
			s.group[p] = MaxParallel(p)
		}
	}
	return s
}

// enqueue puts a run in line; with dispatch false it waits for the next
// dispatch (so that the runs ready at the start line up before any goes).
func (s *slots) enqueue(node, run int, p *config.PipelineBlock, dispatch bool) *ticket {
	t := &ticket{node: node, run: run, pipeline: p, granted: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.waiting)
	for i > 0 && (s.waiting[i-1].node > node || s.waiting[i-1].node == node && s.waiting[i-1].run > run) {
		i--
	}
	s.waiting = append(s.waiting[:i], append([]*ticket{t}, s.waiting[i:]...)...)
	if dispatch {
		s.dispatch()
	}
	return t
}

// start dispatches what was enqueued without.
func (s *slots) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatch()
}

// dispatch grants places to the first waiting runs that fit; s.mu held.
func (s *slots) dispatch() {
	for i := 0; i < len(s.waiting) && s.free > 0; {
		t := s.waiting[i]
		if t.pipeline != nil && s.group[t.pipeline] == 0 {
			i++
			continue
		}
		s.free--
		if t.pipeline != nil {
			s.group[t.pipeline]--
		}
		close(t.granted)
		s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
	}
}

// wait waits for t's place and returns its release. When ctx ends first
// the run goes without a place (it starts and fails at once).
func (s *slots) wait(ctx context.Context, t *ticket) (release func()) {
	release = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.free++
		if t.pipeline != nil {
			s.group[t.pipeline]++
		}
		s.dispatch()
	}
	select {
	case <-t.granted:
		return release
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-t.granted: // granted meanwhile
		return release
	default:
	}
	for i, w := range s.waiting {
		if w == t {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			break
		}
	}
	return func() {}
}
