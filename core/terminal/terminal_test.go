package terminal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/missingstudio/sanddune/core/terminal"
	"github.com/missingstudio/sanddune/sdk"
)

// hangGuard keeps a broken test from hanging; it is no performance bound.
const hangGuard = time.Minute

// userTerminal is a pseudo-terminal standing in for the user's: the test
// types on master; sanddune's side is tty.
func userTerminal(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close(); tty.Close() })
	if err := pty.Setsize(master, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	return master, tty
}

func termios(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	st, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *st
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// TestSessionRestoresTerminal: raw mode while the session runs, the
// settings as before once it ended, however it ended.
func TestSessionRestoresTerminal(t *testing.T) {
	boom := errors.New("plugin died")
	for _, tc := range []struct {
		name string
		end  func(ctx context.Context, cancel func()) (sdk.ExecResult, error)
	}{
		{"exit", func(context.Context, func()) (sdk.ExecResult, error) { return sdk.ExecResult{ExitCode: 0}, nil }},
		{"crash", func(context.Context, func()) (sdk.ExecResult, error) { return sdk.ExecResult{ExitCode: 139}, nil }},
		{"error", func(context.Context, func()) (sdk.ExecResult, error) { return sdk.ExecResult{}, boom }},
		{"cancel", func(ctx context.Context, cancel func()) (sdk.ExecResult, error) {
			cancel()
			<-ctx.Done()
			return sdk.ExecResult{}, ctx.Err()
		}},
		{"panic", func(context.Context, func()) (sdk.ExecResult, error) { panic(boom) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tty := userTerminal(t)
			before := termios(t, tty)
			if before.Lflag&unix.ICANON == 0 || before.Lflag&unix.ECHO == 0 {
				t.Fatalf("a fresh terminal is not in canonical mode with echo: %#x", before.Lflag)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var during unix.Termios
			func() {
				defer func() { _ = recover() }()
				_, _ = terminal.Session(ctx, tty, tty, func(ctx context.Context, _ sdk.TTY) (sdk.ExecResult, error) {
					during = termios(t, tty)
					return tc.end(ctx, cancel)
				})
			}()
			if during.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
				t.Errorf("during the session lflag %#x: want raw mode (no ICANON, ECHO, ISIG)", during.Lflag)
			}
			if after := termios(t, tty); after != before {
				t.Errorf("after the session the terminal is %+v, want %+v", after, before)
			}
			if nonblocking(t, tty) {
				t.Error("after the session the terminal is left in non-blocking mode")
			}
		})
	}
}

// TestSessionForwardsResize: a SIGWINCH sends the terminal's new size.
func TestSessionForwardsResize(t *testing.T) {
	master, tty := userTerminal(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := terminal.Session(ctx, tty, tty, func(ctx context.Context, st sdk.TTY) (sdk.ExecResult, error) {
		if st.Size != (sdk.WindowSize{Rows: 24, Cols: 80}) {
			t.Errorf("initial size %+v, want 24x80", st.Size)
		}
		if err := pty.Setsize(master, &pty.Winsize{Rows: 50, Cols: 132}); err != nil {
			return sdk.ExecResult{}, err
		}
		// The kernel signals the terminal's foreground process group,
		// which this test is not: send the signal it would send.
		if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
			return sdk.ExecResult{}, err
		}
		select {
		case size := <-st.Resize:
			if size != (sdk.WindowSize{Rows: 50, Cols: 132}) {
				t.Errorf("resize %+v, want 50x132", size)
			}
		case <-ctx.Done():
			t.Error("no resize after SIGWINCH")
		}
		return sdk.ExecResult{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSessionEndsPendingRead: a Read of stdin left pending by the session
// returns, so it does not swallow the next keystroke.
func TestSessionEndsPendingRead(t *testing.T) {
	_, tty := userTerminal(t)
	read := make(chan error, 1)
	_, err := terminal.Session(context.Background(), tty, tty, func(_ context.Context, st sdk.TTY) (sdk.ExecResult, error) {
		go func() {
			_, err := st.Stdin.Read(make([]byte, 1))
			read <- err
		}()
		return sdk.ExecResult{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if err == nil {
			t.Error("the pending Read returned data nobody typed")
		}
	case <-time.After(hangGuard):
		t.Fatal("a Read of the session's stdin is still pending after the session")
	}
}

// TestHostSession runs a program on a host pseudo-terminal through the
// user's terminal: the user types, the program answers, its exit code
// comes back.
func TestHostSession(t *testing.T) {
	master, tty := userTerminal(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	dir := t.TempDir()
	screen := readTerminal(master)
	var h terminal.Host
	defer h.Close()
	done := make(chan error, 1)
	var res sdk.ExecResult
	go func() {
		var err error
		res, err = terminal.Session(ctx, tty, tty, func(ctx context.Context, st sdk.TTY) (sdk.ExecResult, error) {
			return h.ExecTTY(ctx, sdk.ExecRequest{
				Shell: `pwd; stty size; IFS= read -r line; echo "got:$line"; exit 4`,
				Cwd:   dir,
				Env:   map[string]string{"PATH": os.Getenv("PATH")},
			}, st)
		})
		done <- err
	}()
	real, _ := filepath.EvalSymlinks(dir)
	for _, want := range []string{real, "24 80"} {
		if err := screen.expect(ctx, want); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := master.WriteString("hello host\r"); err != nil {
		t.Fatal(err)
	}
	if err := screen.expect(ctx, "got:hello host"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || res.ExitCode != 4 {
		t.Errorf("host session: %+v, %v; want exit 4", res, err)
	}
}

// TestAsk asks for a value on the user's terminal and reads the line typed.
func TestAsk(t *testing.T) {
	master, tty := userTerminal(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	screen := readTerminal(master)
	got := make(chan string, 1)
	go func() {
		v, err := terminal.Ask(tty, tty)("ISSUE")
		if err != nil {
			v = "error: " + err.Error()
		}
		got <- v
	}()
	if err := screen.expect(ctx, "Value for {{ISSUE}}: "); err != nil {
		t.Fatal(err)
	}
	if _, err := master.WriteString("42 and more\r"); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "42 and more" {
		t.Errorf("Ask returned %q, want the line typed", v)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := terminal.Ask(r, io.Discard)("X"); err == nil || !strings.Contains(err.Error(), "not a terminal") {
		t.Errorf("Ask on a pipe: %v, want an error", err)
	}
}

// output is what programs print on the user's terminal, read as it comes.
type output struct {
	chunks chan []byte
	unseen []byte // after the last match
}

func readTerminal(r io.Reader) *output {
	o := &output{chunks: make(chan []byte, 64)}
	go func() {
		defer close(o.chunks)
		for {
			b := make([]byte, 4096)
			n, err := r.Read(b)
			if n > 0 {
				o.chunks <- b[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return o
}

// expect waits until text appears after the previous match.
func (o *output) expect(ctx context.Context, text string) error {
	for {
		if i := bytes.Index(o.unseen, []byte(text)); i >= 0 {
			o.unseen = o.unseen[i+len(text):]
			return nil
		}
		select {
		case b, ok := <-o.chunks:
			if !ok {
				return fmt.Errorf("the output ended without %q; after the last match it was %q", text, o.unseen)
			}
			o.unseen = append(o.unseen, b...)
		case <-ctx.Done():
			return fmt.Errorf("%w waiting for %q; after the last match the output was %q", ctx.Err(), text, o.unseen)
		}
	}
}
