package sdk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
)

// ExecTTY serves a TTYSandbox's ExecTTY: stdin bytes go to a pipe the
// sandbox reads, size changes to its Resize channel (only the latest one
// waits there), and output is sent as it is written.
func (s sandboxServer) ExecTTY(stream pluginpb.Sandbox_ExecTTYServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start.GetExec() == nil {
		return status.Error(codes.InvalidArgument, "ExecTTY: the first message must carry the command")
	}
	sb, err := s.handle(start.Exec.Handle)
	if err != nil {
		return err
	}
	tsb, ok := sb.(TTYSandbox)
	if !ok {
		return status.Error(codes.Unimplemented, "this sandbox has no terminal (it does not implement sdk.TTYSandbox)")
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()

	stdin, stdinW := io.Pipe()
	defer stdin.Close()
	resize := make(chan WindowSize, 1)
	go func() {
		defer stdinW.Close()
		for {
			msg, err := stream.Recv()
			if err != nil {
				if err != io.EOF {
					cancel() // the host went away
				}
				return
			}
			if len(msg.Stdin) > 0 {
				// Fails once ExecTTY returned; keep receiving until the stream ends.
				_, _ = stdinW.Write(msg.Stdin)
			}
			if msg.Resize != nil {
				latest(resize, fromWindowSize(msg.Resize))
			}
		}
	}()

	out := &ttyOutput{stream: stream}
	res, err := tsb.ExecTTY(ctx, fromExecRequest(start.Exec), TTY{
		Size: fromWindowSize(start.Size), Stdin: stdin, Output: out, Resize: resize,
	})
	if serr := out.close(); serr != nil {
		return serr
	}
	if err != nil {
		return toStatus(err)
	}
	return stream.Send(&pluginpb.ExecTTYResponse{Result: &pluginpb.ExecResult{
		ExitCode: int64(res.ExitCode), TimedOut: res.TimedOut,
	}})
}

// latest puts v in the one-slot channel c, replacing what waits there.
// It is called from one goroutine only.
func latest[T any](c chan T, v T) {
	for {
		select {
		case c <- v:
			return
		default:
			select {
			case <-c:
			default:
			}
		}
	}
}

// ttyOutput sends what a TTYSandbox writes, until ExecTTY returned.
type ttyOutput struct {
	mu     sync.Mutex
	stream pluginpb.Sandbox_ExecTTYServer
	err    error
	closed bool
}

var errTTYDone = errors.New("ExecTTY returned: no more output")

func (o *ttyOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return 0, errTTYDone
	}
	if o.err != nil {
		return 0, o.err
	}
	for sent := 0; sent < len(p); {
		n := min(len(p)-sent, MaxLineBytes)
		if o.err = o.stream.Send(&pluginpb.ExecTTYResponse{Output: bytes.Clone(p[sent : sent+n])}); o.err != nil {
			return sent, o.err
		}
		sent += n
	}
	return len(p), nil
}

// close stops later writes and returns the first send error.
func (o *ttyOutput) close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	return o.err
}
