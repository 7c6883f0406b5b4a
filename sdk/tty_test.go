package sdk_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// ttyStub's sandboxes implement TTYSandbox in Go, without a terminal: each
// input line comes back upper-cased, each resize as "size RxC", and stdin's
// EOF ends the command with exit code 7.
type ttyStub struct{ stub }

func (s *ttyStub) Create(context.Context, sdk.CreateRequest) (sdk.Sandbox, error) {
	return &ttyStubSandbox{stubSandbox{stub: &s.stub}}, nil
}

type ttyStubSandbox struct{ stubSandbox }

func (s *ttyStubSandbox) ExecTTY(ctx context.Context, req sdk.ExecRequest, tty sdk.TTY) (sdk.ExecResult, error) {
	fmt.Fprintf(tty.Output, "%s on %dx%d\n", req.Argv[0], tty.Size.Rows, tty.Size.Cols)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(tty.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return sdk.ExecResult{ExitCode: 7}, nil
			}
			fmt.Fprintln(tty.Output, strings.ToUpper(line))
		case size := <-tty.Resize:
			fmt.Fprintf(tty.Output, "size %dx%d\n", size.Rows, size.Cols)
		case <-ctx.Done():
			return sdk.ExecResult{}, ctx.Err()
		}
	}
}

func TestFakeExecTTY(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := plugintest.Sandbox(t, &ttyStub{})
	sb, err := p.Create(ctx, sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	stdin, typed := io.Pipe()
	outR, outW := io.Pipe()
	resize := make(chan sdk.WindowSize)
	done := make(chan error, 1)
	var res sdk.ExecResult
	go func() {
		var err error
		res, err = sb.(sdk.TTYSandbox).ExecTTY(ctx, sdk.ExecRequest{Argv: []string{"tui"}},
			sdk.TTY{Size: sdk.WindowSize{Rows: 24, Cols: 80}, Stdin: stdin, Output: outW, Resize: resize})
		outW.Close()
		done <- err
	}()
	out := bufio.NewScanner(outR)
	expect := func(want string) {
		t.Helper()
		if !out.Scan() || out.Text() != want {
			t.Fatalf("terminal shows %q (%v), want %q", out.Text(), out.Err(), want)
		}
	}
	expect("tui on 24x80")
	io.WriteString(typed, "hello\n")
	expect("HELLO")
	resize <- sdk.WindowSize{Rows: 50, Cols: 132}
	expect("size 50x132")
	io.WriteString(typed, "bye\n")
	expect("BYE")
	typed.Close()
	for out.Scan() {
	}
	if err := <-done; err != nil || res.ExitCode != 7 {
		t.Errorf("ExecTTY after stdin's EOF: %+v, %v; want exit 7", res, err)
	}
}

func TestFakeExecTTYNotSupported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb, err := plugintest.Sandbox(t, &stub{}).Create(ctx, sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.(sdk.TTYSandbox).ExecTTY(ctx, sdk.ExecRequest{Argv: []string{"tui"}}, sdk.TTY{Stdin: strings.NewReader(""), Output: io.Discard})
	if !errors.Is(err, sdk.ErrNotSupported) || !strings.Contains(err.Error(), ": ExecTTY: ") {
		t.Errorf("ExecTTY on a sandbox without a terminal: %v, want ErrNotSupported", err)
	}
}

func TestFakeExecTTYPluginShutdown(t *testing.T) {
	t.Parallel()
	_, sb, stop := stoppable(t, &ttyStub{})
	outR, outW := io.Pipe()
	go func() {
		bufio.NewReader(outR).ReadString('\n') // the command started
		stop()
		io.Copy(io.Discard, outR)
	}()
	stdin, typed := io.Pipe()
	defer typed.Close()
	_, err := sb.(sdk.TTYSandbox).ExecTTY(context.Background(), sdk.ExecRequest{Argv: []string{"tui"}}, sdk.TTY{Stdin: stdin, Output: outW})
	outW.Close()
	if !errors.Is(err, sdk.ErrPluginShutdown) {
		t.Errorf("ExecTTY when the plugin goes away: %v, want ErrPluginShutdown", err)
	}
}
