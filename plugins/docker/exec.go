package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// sizeScript sets the terminal's size to "$1" rows and "$2" columns, then
// runs the rest of its arguments (for daemons older than API 1.42, which
// ignore an exec's ConsoleSize).
const sizeScript = `stty rows "$1" cols "$2" 2>/dev/null; shift 2; exec "$@"`

// killWait bounds how long Exec waits for the output stream after killing.
const killWait = 10 * time.Second

func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	stdout := sdk.NewLineWriter(sdk.Stdout, out)
	stderr := sdk.NewLineWriter(sdk.Stderr, out)
	defer stderr.Close()
	defer stdout.Close()
	return s.exec(ctx, req, nil, func(att types.HijackedResponse) error {
		if req.Stdin != nil {
			go func() {
				if len(req.Stdin) > 0 {
					_, _ = att.Conn.Write(req.Stdin)
				}
				_ = att.CloseWrite()
			}()
		}
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		return err
	})
}

// ExecTTY runs a command on a terminal the daemon allocates in the
// container (an exec with Tty); size changes go through the exec resize
// API.
func (s *sandbox) ExecTTY(ctx context.Context, req sdk.ExecRequest, tty sdk.TTY) (sdk.ExecResult, error) {
	if req.Stdin != nil {
		return sdk.ExecResult{}, errors.New("exec: a terminal command reads the terminal, not ExecRequest.Stdin")
	}
	return s.exec(ctx, req, &tty, func(att types.HijackedResponse) error {
		if tty.Stdin != nil {
			go func() {
				_, _ = io.Copy(att.Conn, tty.Stdin)
				_ = att.CloseWrite()
			}()
		}
		_, err := io.Copy(tty.Output, att.Reader)
		return err
	})
}

// exec runs one command; stream moves its input and output over the
// attached connection and returns once the output ended.
func (s *sandbox) exec(ctx context.Context, req sdk.ExecRequest, tty *sdk.TTY, stream func(types.HijackedResponse) error) (sdk.ExecResult, error) {
	argv, cwd, err := s.PrepareExec(req)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	user := ""
	if req.Sudo {
		user = "0:0"
	}
	marker := containerkit.NewMarker()
	opts := container.ExecOptions{
		User:         user,
		AttachStdin:  req.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
		Env:          append(sandboxkit.EnvList(req.Env), marker),
		WorkingDir:   cwd,
		Cmd:          argv,
	}
	var attach container.ExecAttachOptions
	if tty != nil {
		opts.Tty, opts.AttachStdin = true, true
		attach.Tty = true
		if size := tty.Size; size != (sdk.WindowSize{}) {
			if versions.LessThan(s.cli.ClientVersion(), "1.42") {
				// The daemon ignores ConsoleSize: the command sizes its
				// terminal itself before it starts.
				opts.Cmd = append([]string{"sh", "-c", sizeScript, "sh", strconv.Itoa(int(size.Rows)), strconv.Itoa(int(size.Cols))}, argv...)
			} else {
				cs := &[2]uint{uint(size.Rows), uint(size.Cols)}
				opts.ConsoleSize, attach.ConsoleSize = cs, cs
			}
		}
	}
	created, err := s.cli.ContainerExecCreate(ctx, s.ID, opts)
	if err != nil {
		if gone := s.gone(ctx); gone != nil {
			return sdk.ExecResult{}, gone
		}
		return sdk.ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	att, err := s.cli.ContainerExecAttach(ctx, created.ID, attach)
	if err != nil {
		if ctx.Err() != nil {
			s.kill(ctx, user, marker) // it may have started
			return sdk.ExecResult{}, ctx.Err()
		}
		if gone := s.gone(ctx); gone != nil {
			return sdk.ExecResult{}, gone
		}
		return sdk.ExecResult{}, fmt.Errorf("exec: attach: %w", err)
	}
	defer att.Close()

	copied := make(chan error, 1)
	go func() { copied <- stream(att) }()
	if tty != nil && tty.Resize != nil {
		resizing, stop := context.WithCancel(ctx)
		defer stop()
		go s.resize(resizing, created.ID, tty.Resize)
	}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}

	var res sdk.ExecResult
	select {
	case err = <-copied:
	case <-ctx.Done():
		s.kill(ctx, user, marker)
		att.Close()
		<-copied
		return sdk.ExecResult{ExitCode: -1}, ctx.Err()
	case <-timeout:
		res.TimedOut = true
		s.kill(ctx, user, marker)
		select {
		case err = <-copied:
		case <-time.After(killWait):
			att.Close()
			<-copied
		}
	}
	if err != nil && !res.TimedOut && !s.Closed() {
		if gone := s.gone(ctx); gone != nil {
			return res, gone
		}
		return res, fmt.Errorf("exec: read output: %w", err)
	}
	res.ExitCode, err = s.exitCode(ctx, created.ID)
	if err != nil && res.TimedOut {
		return sdk.ExecResult{ExitCode: -1, TimedOut: true}, nil
	}
	if (err != nil || res.ExitCode == killedExit) && !res.TimedOut {
		// A command killed with its container was not the command's
		// doing: say the sandbox is gone.
		if gone := s.gone(ctx); gone != nil {
			return sdk.ExecResult{ExitCode: res.ExitCode}, gone
		}
	}
	return res, err
}

// killedExit is the exit code of a process killed by SIGKILL, as every
// exec is when its container dies.
const killedExit = 128 + 9

// gone reports, wrapping sdk.ErrSandboxGone, a container that was removed
// or stopped from outside the run; nil while it runs (or when that cannot
// be told).
func (s *sandbox) gone(ctx context.Context) error {
	if s.Closed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	in, err := s.cli.ContainerInspect(ctx, s.ID)
	if err == nil && in.State != nil && in.State.Running && !s.alive(ctx) {
		// The daemon has not yet noticed the death its exec just saw:
		// wait for it.
		wait, errc := s.cli.ContainerWait(ctx, s.ID, container.WaitConditionNotRunning)
		select {
		case <-wait:
		case <-errc:
		}
		in, err = s.cli.ContainerInspect(ctx, s.ID)
	}
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("container %s was removed from outside sanddune: %w", s.Name, sdk.ErrSandboxGone)
	case err != nil || in.State == nil || in.State.Running:
		return nil
	case in.State.OOMKilled:
		return fmt.Errorf("container %s was killed for running out of memory (raise memory): %w", s.Name, sdk.ErrSandboxGone)
	}
	return fmt.Errorf("container %s stopped (exit code %d) from outside sanddune: %w", s.Name, in.State.ExitCode, sdk.ErrSandboxGone)
}

// resize applies terminal size changes to an exec until ctx is done.
func (s *sandbox) resize(ctx context.Context, execID string, sizes <-chan sdk.WindowSize) {
	for {
		select {
		case size, ok := <-sizes:
			if !ok {
				return
			}
			_ = s.cli.ContainerExecResize(ctx, execID, container.ResizeOptions{Height: uint(size.Rows), Width: uint(size.Cols)})
		case <-ctx.Done():
			return
		}
	}
}

// exitCode waits for the exec to be reported finished and returns its code.
func (s *sandbox) exitCode(ctx context.Context, execID string) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		in, err := s.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			if s.Closed() {
				return -1, sandboxkit.ErrClosed
			}
			return -1, fmt.Errorf("exec: inspect: %w", err)
		}
		if !in.Running {
			return in.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("exec: still running after its output ended")
		case <-time.After(delay):
		}
	}
}

// alive runs `true` in the container: false when the container cannot run
// a command any more.
func (s *sandbox) alive(ctx context.Context) bool {
	created, err := s.cli.ContainerExecCreate(ctx, s.ID, container.ExecOptions{Cmd: []string{"true"}})
	if err != nil {
		return false
	}
	if err := s.cli.ContainerExecStart(ctx, created.ID, container.ExecStartOptions{Detach: true}); err != nil {
		return false
	}
	code, err := s.exitCode(ctx, created.ID)
	return err == nil && code == 0
}

// kill SIGKILLs every process of one exec (containerkit.KillArgv). Failures are
// ignored: the container's removal is the backstop.
func (s *sandbox) kill(ctx context.Context, user, marker string) {
	if s.Closed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	created, err := s.cli.ContainerExecCreate(ctx, s.ID, container.ExecOptions{
		User:         user,
		AttachStdout: true,
		AttachStderr: true,
		Cmd:          containerkit.KillArgv(marker),
	})
	if err != nil {
		return
	}
	att, err := s.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return
	}
	defer att.Close()
	_, _ = stdcopy.StdCopy(io.Discard, io.Discard, att.Reader)
	_, _ = s.exitCode(ctx, created.ID)
}
