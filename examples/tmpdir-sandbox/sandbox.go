package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// sandbox is one temp directory: root/repo is the repository, root/home
// the home directory.
type sandbox struct {
	root string
	env  map[string]string

	mu     sync.Mutex
	closed bool
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
	argv := req.Argv
	switch {
	case req.Sudo:
		return sdk.ExecResult{}, errors.New("tmpdir: sudo is not supported")
	case req.Shell != "" && len(argv) > 0:
		return sdk.ExecResult{}, errors.New("tmpdir: set argv or shell, not both")
	case req.Shell != "":
		argv = []string{"/bin/sh", "-c", req.Shell}
	case len(argv) == 0:
		return sdk.ExecResult{}, errors.New("tmpdir: empty command")
	}
	if s.isClosed() {
		return sdk.ExecResult{}, errors.New("tmpdir: sandbox closed")
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = "."
	}
	dir, err := s.confine(cwd, true)
	if err != nil {
		return sdk.ExecResult{}, err
	}

	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if req.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, req.Timeout)
	}
	defer cancel()
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(s.root, "home"), "TMPDIR=" + s.root}
	for _, m := range []map[string]string{s.env, req.Env} {
		for k, v := range m {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	if req.Stdin != nil {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	out = sdk.SyncOutput(out)
	stdout, stderr := sdk.NewLineWriter(sdk.Stdout, out), sdk.NewLineWriter(sdk.Stderr, out)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Start(); err != nil {
		return sdk.ExecResult{}, fmt.Errorf("tmpdir: %w", err)
	}
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // background jobs end with the command
	_ = stdout.Close()
	_ = stderr.Close()

	res := sdk.ExecResult{ExitCode: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode = 128 + int(ws.Signal())
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	res.TimedOut = runCtx.Err() != nil
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return res, fmt.Errorf("tmpdir: %w", err)
	}
	return res, nil
}

func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	dst, err := s.confine(sandboxPath, false)
	if err != nil {
		return err
	}
	return copyPath(ctx, hostPath, dst)
}

func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	src, err := s.confine(sandboxPath, true)
	if err != nil {
		return err
	}
	return copyPath(ctx, src, hostPath)
}

// Close removes the directory; it is idempotent.
func (s *sandbox) Close(context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return os.RemoveAll(s.root)
}

func (s *sandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// confine resolves p against repo/ and rejects anything outside the
// sandbox, following symlinks: the whole path when it must exist, else the
// deepest existing ancestor of its parent.
func (s *sandbox) confine(p string, mustExist bool) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.root, "repo", p)
	}
	p = filepath.Clean(p)
	check := p
	if !mustExist {
		check = filepath.Dir(p)
	}
	for {
		real, err := filepath.EvalSymlinks(check)
		if err == nil {
			check = real
			break
		}
		if mustExist || !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("tmpdir: %w", err)
		}
		if _, err := os.Lstat(check); err == nil {
			return "", fmt.Errorf("tmpdir: path confinement: %s is a dangling symlink", check)
		}
		check = filepath.Dir(check)
	}
	for _, q := range []string{p, check} {
		if q != s.root && !strings.HasPrefix(q, s.root+"/") {
			return "", fmt.Errorf("tmpdir: path confinement: %s is outside the sandbox", p)
		}
	}
	if mustExist {
		return check, nil
	}
	return p, nil
}

// copyPath copies a file or directory tree, keeping modes and copying
// symlinks as symlinks. Whatever is in the way at the destination is
// replaced, so a symlink there is never followed.
func copyPath(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if fi, err := os.Lstat(target); err == nil && fi.IsDir() {
				return os.Chmod(target, info.Mode().Perm()|0o700)
			}
			_ = os.Remove(target)
			return os.Mkdir(target, info.Mode().Perm()|0o700)
		}
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
