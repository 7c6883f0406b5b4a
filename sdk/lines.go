package sdk

import (
	"bytes"
	"sync"
)

// LineWriter turns a byte stream (a process's stdout or stderr) into
// OutputLines: one per '\n'-terminated line, without the newline. A line
// longer than MaxLineBytes goes out in pieces with Partial set, so memory
// stays bounded. Close flushes a last unterminated line. A LineWriter is
// not safe for concurrent use; wrap out with SyncOutput when two writers
// (stdout and stderr) share it.
type LineWriter struct {
	stream Stream
	out    OutputFunc
	buf    []byte
}

// NewLineWriter returns a LineWriter that emits lines of stream to out.
func NewLineWriter(stream Stream, out OutputFunc) *LineWriter {
	return &LineWriter{stream: stream, out: out}
}

func (w *LineWriter) Write(p []byte) (int, error) {
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
func (w *LineWriter) emit(line []byte) {
	for len(line) > MaxLineBytes {
		w.out(OutputLine{Stream: w.stream, Text: line[:MaxLineBytes], Partial: true})
		line = line[MaxLineBytes:]
	}
	w.out(OutputLine{Stream: w.stream, Text: line})
}

// flushFull sends full pieces of the buffered unterminated line.
func (w *LineWriter) flushFull() {
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
func (w *LineWriter) Close() error {
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	return nil
}

// SyncOutput makes out safe for concurrent use, e.g. by a stdout and a
// stderr LineWriter.
func SyncOutput(out OutputFunc) OutputFunc {
	var mu sync.Mutex
	return func(l OutputLine) {
		mu.Lock()
		defer mu.Unlock()
		out(l)
	}
}

// LineJoiner reassembles OutputLines split by MaxLineBytes into complete
// lines, per stream. Add returns the complete line once its last piece
// arrives (ok true); the returned slice is valid until the next Add.
type LineJoiner struct {
	partial map[Stream][]byte
}

// Add takes one OutputLine.
func (j *LineJoiner) Add(l OutputLine) (line []byte, ok bool) {
	if j.partial == nil {
		j.partial = map[Stream][]byte{}
	}
	buf, pending := j.partial[l.Stream]
	if l.Partial {
		j.partial[l.Stream] = append(buf, l.Text...)
		return nil, false
	}
	if !pending {
		return l.Text, true
	}
	delete(j.partial, l.Stream)
	return append(buf, l.Text...), true
}
