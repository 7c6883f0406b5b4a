// Package fake holds small in-process providers that the SDK's own tests
// run the transport and the conformance kits against.
package fake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/procgroup"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// SandboxProvider runs commands on the host in a temp dir (isolated) or in
// the worktree (bind-mount). It is no security boundary.
type SandboxProvider struct {
	Contract sdk.Contract
}

func (p *SandboxProvider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version: "0.0.1", Description: "test sandbox",
		Sandbox: &sdk.SandboxCapabilities{Contract: p.Contract},
	}, nil
}

func (p *SandboxProvider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "shell", Type: cty.String, Default: cty.StringVal("sh"), Description: "shell for ExecRequest.Shell"},
	}}, nil
}

type config struct {
	Shell string `cty:"shell"`
}

func (p *SandboxProvider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	var c config
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if c.Shell == "" {
		return sdk.Diagnostics{{Severity: sdk.SeverityError, Summary: "empty shell", Attribute: "shell"}}, nil
	}
	return nil, nil
}

func (p *SandboxProvider) Describe(context.Context, sdk.Config) (sdk.SandboxDescription, error) {
	return sdk.SandboxDescription{}, nil
}

func (p *SandboxProvider) Preflight(context.Context, sdk.PreflightRequest) error { return nil }

func (p *SandboxProvider) Create(_ context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	var c config
	if err := req.Config.Decode(&c); err != nil {
		return nil, err
	}
	s := &Sandbox{env: req.Env, shell: c.Shell}
	if p.Contract == sdk.ContractBindMount {
		s.root, s.repo = req.WorktreePath, req.WorktreePath
	} else {
		dir, err := os.MkdirTemp("", "sanddune-fake-")
		if err != nil {
			return nil, err
		}
		s.root, s.repo, s.home, s.owned = dir, filepath.Join(dir, "repo"), filepath.Join(dir, "home"), true
		for _, d := range []string{s.repo, s.home} {
			if err := os.Mkdir(d, 0o755); err != nil {
				return nil, err
			}
		}
	}
	real, err := filepath.EvalSymlinks(s.root)
	if err != nil {
		return nil, err
	}
	s.root = real
	return s, nil
}

// Sandbox is one fake sandbox.
type Sandbox struct {
	root, repo, home string
	owned            bool
	env              map[string]string
	shell            string

	mu     sync.Mutex
	closed bool
}

func (s *Sandbox) Info() sdk.SandboxInfo {
	return sdk.SandboxInfo{ID: s.root, RepoPath: s.repo, HomePath: s.home}
}

var errClosed = errors.New("sandbox is closed")

// resolve confines p (relative to the repo) to the sandbox root, following
// symlinks of the part that exists.
func (s *Sandbox) resolve(p string) (string, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return "", errClosed
	}
	p, err := sandboxkit.SandboxPath(p, s.repo)
	if err != nil {
		return "", err
	}
	existing, rest := p, ""
	for {
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			p = filepath.Join(real, rest)
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	if p != s.root && !strings.HasPrefix(p, s.root+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %s is outside the sandbox", sdk.ErrConfinement, p)
	}
	return p, nil
}

func (s *Sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	dir, err := s.resolve(req.Cwd)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	argv := req.Argv
	if req.Shell != "" {
		argv = []string{s.shell, "-c", req.Shell}
	}
	if len(argv) == 0 {
		return sdk.ExecResult{}, errors.New("empty command")
	}
	env := os.Environ()
	if s.home != "" {
		env = append(env, "HOME="+s.home)
	}
	for _, m := range []map[string]string{s.env, req.Env} {
		for k, v := range m {
			env = append(env, k+"="+v)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = bytes.NewReader(req.Stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out = sdk.SyncOutput(out)
	stdout, stderr := sdk.NewLineWriter(sdk.Stdout, out), sdk.NewLineWriter(sdk.Stderr, out)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return sdk.ExecResult{}, err
	}
	tctx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-tctx.Done():
			_ = procgroup.Kill(cmd.Process.Pid)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	stdout.Close()
	stderr.Close()
	if ctx.Err() != nil {
		return sdk.ExecResult{}, ctx.Err()
	}
	if tctx.Err() != nil {
		return sdk.ExecResult{ExitCode: -1, TimedOut: true}, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return sdk.ExecResult{ExitCode: ee.ExitCode()}, nil
	}
	return sdk.ExecResult{}, err
}

func (s *Sandbox) CopyIn(_ context.Context, hostPath, sandboxPath string) error {
	dst, err := s.resolve(sandboxPath)
	if err != nil {
		return err
	}
	return copyTree(hostPath, dst)
}

func (s *Sandbox) CopyOut(_ context.Context, sandboxPath, hostPath string) error {
	src, err := s.resolve(sandboxPath)
	if err != nil {
		return err
	}
	return copyTree(src, hostPath)
}

// copyTree copies a file or directory; symlinks inside a tree are copied as
// symlinks.
func copyTree(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFile(src, dst, fi.Mode())
	}
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(target, fi.Mode().Perm())
		case fi.Mode()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			return copyFile(p, target, fi.Mode())
		}
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_ = os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (s *Sandbox) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.owned {
		return os.RemoveAll(s.root)
	}
	return nil
}
