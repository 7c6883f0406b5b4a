package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// sandbox is one temp directory: root/repo is the repository, root/home
// the home directory.
type sandbox struct {
	root   string
	env    map[string]string
	runner sandboxkit.Runner
	// recovered: reattached by Recover; Close leaves the directory.
	recovered bool
}

func (s *sandbox) Info() sdk.SandboxInfo {
	return sdk.SandboxInfo{
		ID:       s.root,
		RepoPath: filepath.Join(s.root, "repo"),
		HomePath: filepath.Join(s.root, "home"),
	}
}

// Exec runs the command in its own process group; a timeout or a cancelled
// ctx kills the group.
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	if req.Sudo {
		return sdk.ExecResult{}, errors.New("tmpdir: sudo is not supported")
	}
	argv, err := sandboxkit.Argv(req, "/bin/sh")
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("tmpdir: %w", err)
	}
	dir, err := sandboxkit.SandboxPath(req.Cwd, s.Info().RepoPath)
	if err == nil {
		err = sandboxkit.Area{s.root}.Dir(dir)
	}
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("tmpdir: %w", err)
	}
	env := sandboxkit.MergeEnv(map[string]string{
		"PATH":   os.Getenv("PATH"),
		"HOME":   filepath.Join(s.root, "home"),
		"TMPDIR": s.root,
	}, s.env, req.Env)
	res, err := s.runner.Run(ctx, sandboxkit.Command{Argv: argv, Dir: dir, Env: env, Stdin: req.Stdin, Timeout: req.Timeout}, out)
	if err != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("tmpdir: %w", err)
	}
	return res, err
}

// CopyIn refuses targets outside the sandbox, also through symlinks.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	dst, err := sandboxkit.SandboxPath(sandboxPath, s.Info().RepoPath)
	if err != nil {
		return fmt.Errorf("tmpdir: %w", err)
	}
	return sandboxkit.Area{s.root}.CopyIn(ctx, hostPath, dst)
}

// CopyOut refuses sources outside the sandbox, also through symlinks.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	src, err := sandboxkit.SandboxPath(sandboxPath, s.Info().RepoPath)
	if err != nil {
		return fmt.Errorf("tmpdir: %w", err)
	}
	return sandboxkit.Area{s.root}.CopyOut(ctx, src, hostPath)
}

// Close kills what still runs and removes the directory (a recovered
// sandbox's stays); it is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.runner.Close()
	if err := s.runner.Wait(ctx); err != nil || s.recovered {
		return err
	}
	return sandboxkit.RemoveAll(s.root)
}
