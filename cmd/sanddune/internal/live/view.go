package live

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/missingstudio/sanddune/core"
)

// tick is how often the view is redrawn (spinner, elapsed times).
const tick = 150 * time.Millisecond

// View draws the model on a terminal, below the lines printed through it.
// Each redraw is one write: the cursor goes up to the first line of the
// last frame, every line is rewritten and cleared to its end, and what the
// last frame had more is cleared; terminals that know synchronized output
// (DEC mode 2026) show the frame at once. Its methods are safe for
// concurrent use.
type View struct {
	mu    sync.Mutex
	out   *os.File
	m     *model
	drawn []string // the lines on screen, for the next redraw
	width int      // the width drawn at
	shut  bool     // closed: nothing is drawn any more
	stop  chan struct{}
	done  chan struct{}
}

// Start draws runs on out (a terminal) until Close.
func Start(out *os.File, runs []Run) *View {
	v := &View{out: out, m: newModel(runs), stop: make(chan struct{}), done: make(chan struct{})}
	v.mu.Lock()
	v.redraw()
	v.mu.Unlock()
	go v.loop()
	return v
}

func (v *View) loop() {
	defer close(v.done)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-winch:
		case <-t.C:
			v.mu.Lock()
			v.m.frame++
			v.mu.Unlock()
		}
		v.mu.Lock()
		v.redraw()
		v.mu.Unlock()
	}
}

// Phase, Event and Progress feed the view (core.RunOptions' OnPhase,
// OnEvent and OnSandboxProgress).
func (v *View) Phase(e core.PhaseEvent) { v.update(func(m *model) { m.phase(e) }) }

func (v *View) Event(e core.AgentEvent) { v.update(func(m *model) { m.event(e) }) }

func (v *View) Progress(p core.SandboxProgress) { v.update(func(m *model) { m.progress(p) }) }

// Stopping shows every run as stopping and what it saves.
func (v *View) Stopping() { v.update(func(m *model) { m.stopping = true }) }

func (v *View) update(f func(*model)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f(v.m)
	v.redraw()
}

// Writer is an io.Writer whose lines are printed above the view (to w:
// stdout or stderr); a partial line waits for its end.
func (v *View) Writer(w io.Writer) io.Writer { return &above{v: v, w: w} }

type above struct {
	v   *View
	w   io.Writer
	buf []byte
}

func (a *above) Write(p []byte) (int, error) {
	a.v.mu.Lock()
	defer a.v.mu.Unlock()
	if a.v.shut {
		_, err := a.w.Write(append(a.buf, p...))
		a.buf = a.buf[:0]
		return len(p), err
	}
	a.buf = append(a.buf, p...)
	i := bytes.LastIndexByte(a.buf, '\n')
	if i < 0 {
		return len(p), nil
	}
	lines := a.buf[:i+1]
	a.v.erase()
	_, err := a.w.Write(lines)
	a.buf = append(a.buf[:0], a.buf[i+1:]...)
	a.v.redraw()
	return len(p), err
}

// Close stops redrawing and erases the view: the caller prints the
// summary in its place.
func (v *View) Close() {
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
	v.shut = true
}

func (v *View) size() (width, height int) {
	w, h, err := term.GetSize(int(v.out.Fd()))
	if err != nil || w <= 0 {
		return 80, 24
	}
	return w, h
}

// up is the escape that moves the cursor to the first line of the last
// frame. Narrowed since, a terminal that rewraps its lines shows a long
// line of it on more rows.
func (v *View) up(width int) string {
	rows := 0
	for _, l := range v.drawn {
		n := 1
		if w := ansi.StringWidth(l); width < v.width && w > width {
			n = (w + width - 1) / width
		}
		rows += n
	}
	if rows == 0 {
		return "\r"
	}
	return fmt.Sprintf("\r\x1b[%dA", rows)
}

// erase removes the last frame; v.mu held.
func (v *View) erase() {
	if len(v.drawn) == 0 {
		return
	}
	width, _ := v.size()
	io.WriteString(v.out, v.up(width)+"\x1b[J")
	v.drawn = nil
}

// redraw draws the current frame over the last one; v.mu held.
func (v *View) redraw() {
	if v.shut {
		return
	}
	width, height := v.size()
	lines := v.m.Frame(time.Now(), width, height)
	var b strings.Builder
	b.WriteString("\x1b[?2026h")
	b.WriteString(v.up(width))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\x1b[K\n")
	}
	b.WriteString("\x1b[J\x1b[?2026l")
	io.WriteString(v.out, b.String())
	v.drawn, v.width = lines, width
}
