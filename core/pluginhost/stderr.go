package pluginhost

import (
	"bufio"
	"io"

	"github.com/hashicorp/go-hclog"
)

// stderrTo returns a writer that logs each line a plugin writes to its
// synced stderr (non-hclog output) at debug level; closing it ends the
// logging goroutine.
func stderrTo(l hclog.Logger) io.WriteCloser {
	r, w := io.Pipe()
	go func() {
		s := bufio.NewScanner(r)
		s.Buffer(make([]byte, 64*1024), 1<<20)
		for s.Scan() {
			l.Debug(s.Text())
		}
		r.CloseWithError(s.Err())
	}()
	return w
}
