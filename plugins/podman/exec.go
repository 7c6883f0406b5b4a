package podman

import (
	"context"
	"fmt"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/procgroup"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Exec runs one `podman exec` per command. Killing that client does not
// stop the command inside the container, so cancellation and timeouts
// first kill, inside, every process carrying this exec's marker.
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	argv, cwd, err := s.PrepareExec(req)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	user := fmt.Sprintf("%d:%d", s.UID, s.GID)
	if req.Sudo {
		user = "0:0"
	}
	marker := containerkit.NewMarker()
	args := []string{"exec", "--user", user, "--workdir", cwd, "--env", marker}
	if req.Stdin != nil {
		// No detach keys: a prompt holding ctrl-p ctrl-q must not detach.
		args = append(args, "--interactive", "--detach-keys", "")
	}
	envFlags, envValues := envArgs(req.Env)
	args = append(args, envFlags...)
	args = append(append(args, s.ID), argv...)

	return s.runner.Run(ctx, sandboxkit.Command{
		Argv:    s.cli.argv(args...),
		Env:     s.cli.environMap(envValues),
		Stdin:   req.Stdin,
		Timeout: req.Timeout,
		Kill: func(pgid int) {
			s.kill(user, marker)
			_ = procgroup.Kill(pgid)
		},
	}, out)
}

// kill SIGKILLs every process of one exec inside the container. Failures
// are ignored: the container's removal is the backstop.
func (s *sandbox) kill(user, marker string) {
	if s.Closed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	args := append([]string{"exec", "--user", user, s.ID}, containerkit.KillArgv(marker)...)
	_, _ = s.cli.run(ctx, nil, args...)
}
