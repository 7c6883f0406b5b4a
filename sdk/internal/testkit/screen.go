package testkit

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Screen collects a terminal's output for expect-style tests: write the
// output to it, and WaitFor what should appear next.
type Screen struct {
	mu     sync.Mutex
	out    []byte
	seen   int           // WaitFor matched up to here
	change chan struct{} // closed and replaced on every Write and on Close
	closed bool
}

// NewScreen returns an empty Screen.
func NewScreen() *Screen { return &Screen{change: make(chan struct{})} }

// Write appends p to the screen.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out = append(s.out, p...)
	close(s.change)
	s.change = make(chan struct{})
	return len(p), nil
}

// Close says no more output will come: a pending WaitFor fails.
func (s *Screen) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.change)
	}
	return nil
}

// WaitFor waits until text appears after the previous match and moves past
// it. It fails when ctx ends or the screen is closed first.
func (s *Screen) WaitFor(ctx context.Context, text string) error {
	for {
		s.mu.Lock()
		if i := bytes.Index(s.out[s.seen:], []byte(text)); i >= 0 {
			s.seen += i + len(text)
			s.mu.Unlock()
			return nil
		}
		change, closed := s.change, s.closed
		s.mu.Unlock()
		if closed {
			return fmt.Errorf("the output ended without %q; it was:\n%s", text, s.String())
		}
		select {
		case <-change:
		case <-ctx.Done():
			return fmt.Errorf("%w waiting for %q; the output was:\n%s", ctx.Err(), text, s.String())
		}
	}
}

// String returns all output so far.
func (s *Screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.out)
}
