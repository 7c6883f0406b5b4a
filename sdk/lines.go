package sdk

import (
	"bytes"
	"io"
	"sync"
)

// NewLineWriter returns a writer that turns a byte stream (a process's
// stdout or stderr) into OutputLines of stream sent to out: one per
// '\n'-terminated line, without the newline. A line longer than
// MaxLineBytes goes out in pieces with Partial set, so memory stays
// bounded. Close flushes a last unterminated line. The writer is not safe
// for concurrent use; wrap out with SyncOutput when two writers (stdout and
// stderr) share it.
func NewLineWriter(stream Stream, out OutputFunc) io.WriteCloser {
	return &lineWriter{stream: stream, out: out}
}

type lineWriter struct {
	stream Stream
	out    OutputFunc
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			w.flushFull()
			break
		}
		line := p[:i]
		if len(w.buf) > 0 {
			w.buf = append(w.buf, line...)
			w.flushFull()
			line = w.buf
		}
		w.emit(line)
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// emit sends a complete line, in pieces when it is long.
func (w *lineWriter) emit(line []byte) {
	for len(line) > MaxLineBytes {
		w.out(OutputLine{Stream: w.stream, Text: line[:MaxLineBytes], Partial: true})
		line = line[MaxLineBytes:]
	}
	w.out(OutputLine{Stream: w.stream, Text: line})
}

// flushFull sends full pieces of the buffered unterminated line.
func (w *lineWriter) flushFull() {
	if len(w.buf) <= MaxLineBytes {
		return
	}
	rest := w.buf
	for len(rest) > MaxLineBytes {
		w.out(OutputLine{Stream: w.stream, Text: rest[:MaxLineBytes], Partial: true})
		rest = rest[MaxLineBytes:]
	}
	w.buf = append(w.buf[:0], rest...)
}

// Close emits the unterminated last line, if any.
func (w *lineWriter) Close() error {
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	return nil
}

// SyncOutput makes out safe for concurrent use, e.g. by a stdout and a
// stderr writer of NewLineWriter.
func SyncOutput(out OutputFunc) OutputFunc {
	var mu sync.Mutex
	return func(l OutputLine) {
		mu.Lock()
		defer mu.Unlock()
		out(l)
	}
}
