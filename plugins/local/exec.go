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
	if req.Sudo {
		return sdk.ExecResult{}, errors.New("local sandbox: sudo is not supported: commands run as the user running sanddune")
	}
	argv, err := sandboxkit.Argv(req, "/bin/sh")
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("local sandbox: %w", err)
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = s.info.RepoPath
	}
	dir, err := s.resolve(cwd)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	res, err := s.runner.Run(ctx, sandboxkit.Command{
		Argv:      argv,
		Dir:       dir,
		Env:       sandboxkit.MergeEnv(s.env, req.Env),
		Stdin:     req.Stdin,
		Timeout:   req.Timeout,
		KillGrace: killGrace,
	}, out)
	if err != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("local sandbox: %w", err)
	}
	return res, err
}
