package enginetest

import (
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core"
)

// TestBoundedMemoryHugeOutput: an agent printing 1 GB (a million lines)
// streams through the sandbox, the engine and the agent's parser, all in
// this process over the plugin protocol, without the heap growing with it.
// The peak is about 40 MB whatever the size: the limit fails a heap that
// keeps 3% of the bytes or 25 bytes a line (10 million 100-byte lines and
// a 200 MB limit took three times as long to tell less).
func TestBoundedMemoryHugeOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GB")
	}
	const size = 1_000_000_000
	const limit = 64 << 20
	repo := newRepo(t)
	var term buffer
	agent := "head -c 1000000000 /dev/zero | tr '\\0' a | fold -w 1000; echo; echo '" + signal + "'"
	o := options(repo, localSandbox(t), commandAgent(t, agent), &term)
	o.Logging.Path = os.DevNull // the log would hold the gigabyte too
	var events atomic.Int64
	o.OnEvent = func(core.AgentEvent) { events.Add(1) }

	start := time.Now()
	var res *core.Result
	peak := peakHeap(func() { res = run(t, o) })

	t.Logf("%d MB streamed in %s, %d events, peak HeapInuse %d MB", size>>20, time.Since(start).Round(time.Millisecond), events.Load(), peak>>20)
	if n := events.Load(); n != size/1000+1 {
		t.Errorf("%d events, want %d (one per line)", n, size/1000+1)
	}
	if res.CompletionSignal != signal {
		t.Errorf("signal %q", res.CompletionSignal)
	}
	if len(res.Stdout) > core.MaxStdoutBytes || !strings.HasSuffix(res.Stdout, signal) {
		t.Errorf("Result.Stdout: %d bytes ending %q", len(res.Stdout), res.Stdout[max(0, len(res.Stdout)-40):])
	}
	if peak > limit {
		t.Errorf("peak HeapInuse %d MB, want under %d MB", peak>>20, limit>>20)
	}
}

// TestBoundedMemoryHugeLine: a 256 MB line without a newline is cut at
// core.MaxAgentLine for the parser, with a warning.
func TestBoundedMemoryHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MB")
	}
	const limit = 200 << 20
	repo := newRepo(t)
	var term buffer
	agent := "head -c 268435456 /dev/zero | tr '\\0' a; echo; echo '" + signal + "'"
	o := options(repo, localSandbox(t), commandAgent(t, agent), &term)
	o.Logging.Path = os.DevNull
	var longest atomic.Int64
	o.OnEvent = func(e core.AgentEvent) {
		if n := int64(len(e.Event.Text)); n > longest.Load() {
			longest.Store(n)
		}
	}
	var res *core.Result
	peak := peakHeap(func() { res = run(t, o) })
	t.Logf("peak HeapInuse %d MB", peak>>20)
	if longest.Load() != core.MaxAgentLine || res.CompletionSignal != signal {
		t.Errorf("longest event %d bytes (want %d), signal %q", longest.Load(), core.MaxAgentLine, res.CompletionSignal)
	}
	if !strings.Contains(term.String(), "truncated") {
		t.Errorf("no truncation warning:\n%s", term.String())
	}
	if peak > limit {
		t.Errorf("peak HeapInuse %d MB, want under %d MB", peak>>20, limit>>20)
	}
}

// peakHeap runs f and returns the peak HeapInuse sampled meanwhile.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-sampled
	return peak
}
