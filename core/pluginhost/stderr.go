package pluginhost

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// tailLines is how many of a plugin's last stderr lines a start-up
// failure shows.
const tailLines = 20

// stderrLog logs each line a plugin writes on stderr that is not hclog
// JSON (JSON lines go-plugin logs itself) at warn level — a plugin should
// log JSON, so anything else is worth seeing — and keeps the last lines
// for start-up errors (a Python traceback, a missing shared library).
type stderrLog struct {
	w    *io.PipeWriter
	done chan struct{}
	mu   sync.Mutex
	tail []string
}

func newStderrLog(l hclog.Logger) *stderrLog {
	r, w := io.Pipe()
	s := &stderrLog{w: w, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.TrimSpace(line) == "" || json.Valid([]byte(line)) {
				continue
			}
			l.Warn(line)
			s.mu.Lock()
			s.tail = append(s.tail, line)
			if len(s.tail) > tailLines {
				s.tail = s.tail[len(s.tail)-tailLines:]
			}
			s.mu.Unlock()
		}
		r.CloseWithError(sc.Err())
	}()
	return s
}

func (s *stderrLog) Write(p []byte) (int, error) { return s.w.Write(p) }

// Close stops logging once every line written so far is logged.
func (s *stderrLog) Close() error {
	s.w.Close()
	<-s.done
	return nil
}

// Tail returns the last non-JSON lines the plugin wrote on stderr.
func (s *stderrLog) Tail() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tail...)
}
