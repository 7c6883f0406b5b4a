package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// killGrace is how long a cancelled or timed-out command gets between
// SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// Exec runs a command in its own process group.
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	c, err := s.command(req)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	res, err := s.runner.Run(ctx, c, out)
	return res, s.wrap(ctx, err)
}

// ExecTTY runs a command on a pseudo-terminal, in its own session.
func (s *sandbox) ExecTTY(ctx context.Context, req sdk.ExecRequest, tty sdk.TTY) (sdk.ExecResult, error) {
	c, err := s.command(req)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	res, err := s.runner.RunTTY(ctx, c, tty)
	return res, s.wrap(ctx, err)
}

func (s *sandbox) command(req sdk.ExecRequest) (sandboxkit.Command, error) {
	if req.Sudo {
		return sandboxkit.Command{}, errors.New("local sandbox: sudo is not supported: commands run as the user running sanddune")
	}
	argv, err := sandboxkit.Argv(req, "/bin/sh")
	if err != nil {
		return sandboxkit.Command{}, fmt.Errorf("local sandbox: %w", err)
	}
	dir, err := s.path(req.Cwd)
	if err != nil {
		return sandboxkit.Command{}, err
	}
	if err := s.area().Dir(dir); err != nil {
		return sandboxkit.Command{}, fmt.Errorf("local sandbox: cwd: %w", err)
	}
	return sandboxkit.Command{
		Argv:      argv,
		Dir:       dir,
		Env:       sandboxkit.MergeEnv(s.env, req.Env, map[string]string{markerEnv: s.root}),
		Stdin:     req.Stdin,
		Timeout:   req.Timeout,
		KillGrace: killGrace,
	}, nil
}

func (s *sandbox) wrap(ctx context.Context, err error) error {
	if err != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("local sandbox: %w", err)
	}
	return err
}
