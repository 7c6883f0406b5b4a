package terminal

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// killGrace is how long a cancelled session gets between SIGTERM and
// SIGKILL.
const killGrace = 2 * time.Second

// Host runs interactive sessions on this machine, without a sandbox
// (`sandbox = "none"`): the agent runs as the user, on a pseudo-terminal of
// its own. It is not a security boundary. The zero Host is ready to use.
type Host struct {
	runner sandboxkit.Runner
}

var _ sdk.TTYSandbox = (*Host)(nil)

// ExecTTY runs req on a new pseudo-terminal on the host. req.Cwd must be
// absolute and req.Env is the whole environment: nothing is inherited.
func (h *Host) ExecTTY(ctx context.Context, req sdk.ExecRequest, tty sdk.TTY) (sdk.ExecResult, error) {
	if req.Sudo {
		return sdk.ExecResult{}, fmt.Errorf("host session: sudo: %w", sdk.ErrNotSupported)
	}
	if !filepath.IsAbs(req.Cwd) {
		return sdk.ExecResult{}, fmt.Errorf("host session: the working directory %q is not absolute", req.Cwd)
	}
	argv, err := sandboxkit.Argv(req, "/bin/sh")
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("host session: %w", err)
	}
	return h.runner.RunTTY(ctx, sandboxkit.Command{
		Argv: argv, Dir: req.Cwd, Env: req.Env, Timeout: req.Timeout, KillGrace: killGrace,
	}, tty)
}

// Close kills the sessions still running.
func (h *Host) Close() { h.runner.Close() }
