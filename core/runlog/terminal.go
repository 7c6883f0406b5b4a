package runlog

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

var spinFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

const statusWidth = 120

// Terminal is the progress display shared by the runs of one process: it
// serialises their lines, and on a terminal keeps one status line at the
// bottom with a spinner and every run's current phase.
type Terminal struct {
	mu     sync.Mutex
	out    io.Writer
	err    io.Writer
	tty    bool
	active []*Phase
	frame  int
	drawn  bool
	ticker *time.Ticker
	done   chan struct{}
	noHint bool
}

// NewTerminal displays progress on out and hints on err. The spinner is on
// when out is a terminal that moves the cursor (TERM is not "dumb").
func NewTerminal(out, err io.Writer) *Terminal {
	t := &Terminal{out: out, err: err}
	if f, ok := out.(*os.File); ok {
		t.tty = isatty.IsTerminal(f.Fd()) && os.Getenv("TERM") != "dumb"
	}
	return t
}

// WithoutLogHint makes the runs in file mode print no `logging to` and
// `tail -f` hint: for a display that shows the runs otherwise (sanddune
// run's live view). It returns t.
func (t *Terminal) WithoutLogHint() *Terminal {
	t.noHint = true
	return t
}

// Stdio displays on os.Stdout and os.Stderr.
func Stdio() *Terminal { return NewTerminal(os.Stdout, os.Stderr) }

// Println writes one line to the progress output.
func (t *Terminal) Println(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clear()
	fmt.Fprintln(t.out, s)
	t.draw()
}

// Eprintln writes one line to the hint output.
func (t *Terminal) Eprintln(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clear()
	fmt.Fprintln(t.err, s)
	t.draw()
}

func (t *Terminal) clear() {
	if t.drawn {
		io.WriteString(t.out, "\r\033[K")
		t.drawn = false
	}
}

func (t *Terminal) draw() {
	if !t.tty || len(t.active) == 0 {
		return
	}
	parts := make([]string, len(t.active))
	for i, p := range t.active {
		parts[i] = p.log.prefix + p.msg
	}
	s := spinFrames[t.frame%len(spinFrames)] + " " + strings.Join(parts, " · ")
	if r := []rune(s); len(r) > statusWidth {
		s = string(r[:statusWidth-1]) + "…"
	}
	io.WriteString(t.out, s)
	t.drawn = true
}

// start shows a phase; on a terminal it joins the status line, otherwise
// it is printed as a line.
func (t *Terminal) start(p *Phase) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tty {
		fmt.Fprintln(t.out, p.log.prefix+p.msg+"...")
		return
	}
	t.active = append(t.active, p)
	if t.ticker == nil {
		t.ticker = time.NewTicker(100 * time.Millisecond)
		t.done = make(chan struct{})
		go t.spin(t.ticker, t.done)
	}
	t.clear()
	t.draw()
}

func (t *Terminal) end(p *Phase, line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clear()
	for i, a := range t.active {
		if a == p {
			t.active = append(t.active[:i], t.active[i+1:]...)
			break
		}
	}
	fmt.Fprintln(t.out, line)
	if len(t.active) == 0 && t.ticker != nil {
		t.ticker.Stop()
		close(t.done)
		t.ticker = nil
	}
	t.draw()
}

func (t *Terminal) spin(tk *time.Ticker, done chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-tk.C:
			t.mu.Lock()
			t.frame++
			t.clear()
			t.draw()
			t.mu.Unlock()
		}
	}
}
