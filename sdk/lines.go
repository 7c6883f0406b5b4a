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
// arrives (ok true); the returned slice is valid until the next Add. With
// Max set, a line keeps its first Max bytes, the rest is dropped and
// Truncated says so: memory stays bounded whatever the process prints.
type LineJoiner struct {
	Max int // bytes kept of a line; 0 keeps all

	partial   map[Stream]*joined
	truncated bool
}

type joined struct {
	text []byte
	cut  bool
}

// Add takes one OutputLine.
func (j *LineJoiner) Add(l OutputLine) (line []byte, ok bool) {
	p := j.partial[l.Stream]
	if p == nil && !l.Partial {
		line, j.truncated = j.fit(l.Text, 0)
		return line, true
	}
	if p == nil {
		if j.partial == nil {
			j.partial = map[Stream]*joined{}
		}
		p = &joined{}
		j.partial[l.Stream] = p
	}
	text, cut := j.fit(l.Text, len(p.text))
	p.text, p.cut = append(p.text, text...), p.cut || cut
	if l.Partial {
		return nil, false
	}
	delete(j.partial, l.Stream)
	j.truncated = p.cut
	return p.text, true
}

// Truncated reports whether the line Add last returned was cut at Max.
func (j *LineJoiner) Truncated() bool { return j.truncated }

// fit cuts text to what Max leaves after have bytes of the line.
func (j *LineJoiner) fit(text []byte, have int) ([]byte, bool) {
	if j.Max <= 0 || have+len(text) <= j.Max {
		return text, false
	}
	return text[:max(j.Max-have, 0)], true
}
