package runlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"

	"github.com/missingstudio/sanddune/sdk"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFileModeWritesLogAndHint(t *testing.T) {
	t.Parallel()
	var out, errOut syncBuf
	path := filepath.Join(t.TempDir(), "logs", "fix-1.log")
	l, err := Open(Options{Run: "fix-1", Path: path, Terminal: NewTerminal(&out, &errOut)})
	if err != nil {
		t.Fatal(err)
	}
	p := l.Phase("Creating sandbox")
	p.Done(nil)
	l.Text("hello world\nsecond\n")
	l.ToolCall("Bash", "npm test")
	l.Warn("careful")
	l.Summary(Summary{Iterations: 1, MaxIterations: 3, Signal: "<done>", Commits: 2, Branch: "main", Usage: &sdk.Usage{InputTokens: 5}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	log := string(b)
	for _, want := range []string{"Creating sandbox...", "Creating sandbox done", "hello world\n", "second\n", "→ Bash(npm test)", "warning: careful", "iterations: 1/3 (completion signal <done>)", "commits:    2 on main", "tokens:     5 in"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if out.String() != "" {
		t.Errorf("file mode wrote progress to stdout: %q", out.String())
	}
	if e := errOut.String(); !strings.Contains(e, "tail -f "+path) || !strings.Contains(e, "[fix-1] warning: careful") {
		t.Errorf("hint stream: %q", e)
	}
	if l.Path() != path {
		t.Errorf("path %q", l.Path())
	}
}

func TestStdoutModePrefixesLines(t *testing.T) {
	t.Parallel()
	var out, errOut syncBuf
	term := NewTerminal(&out, &errOut)
	a, _ := Open(Options{Run: "a", Mode: Stdout, Terminal: term})
	b, _ := Open(Options{Run: "b", Mode: Stdout, Terminal: term})
	pa := a.Phase("Running agent")
	b.Text("from b\n")
	pa.Done(errors.New("x"))
	a.Close()
	b.Close()
	want := "[a] Running agent...\n[b] from b\n[a] Running agent failed"
	if !strings.HasPrefix(out.String(), want) {
		t.Fatalf("got %q", out.String())
	}
	if a.Path() != "" {
		t.Fatal("stdout mode has no path")
	}
}

// The longest run name CheckRunName accepts names real files: its log and
// patch (<run>-<YYYYMMDD-HHMMSS>-<6 hex>.log / .patch); 255 bytes do not.
func TestRunNameLimitFitsItsFiles(t *testing.T) {
	long := strings.Repeat("n", MaxRunName)
	if err := CheckRunName(long); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, ext := range []string{".log", ".patch"} {
		path := filepath.Join(dir, long+"-20260101-120000-abcdef"+ext)
		l, err := Open(Options{Run: long, Path: path, Terminal: NewTerminal(&syncBuf{}, &syncBuf{})})
		if err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		_ = l.Close()
	}
	if err := CheckRunName(strings.Repeat("n", 255)); err == nil || !strings.Contains(err.Error(), "at most 200") {
		t.Fatalf("255-byte name: %v", err)
	}
}

// TestNoSpinnerOnADumbTerminal: a terminal whose TERM is "dumb" cannot
// redraw a status line: the progress goes out as plain lines.
func TestNoSpinnerOnADumbTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	for term, spinner := range map[string]bool{"xterm-256color": true, "dumb": false} {
		t.Setenv("TERM", term)
		if got := NewTerminal(tty, io.Discard).tty; got != spinner {
			t.Errorf("TERM=%s: spinner %v, want %v", term, got, spinner)
		}
	}
}
