package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/missingstudio/sanddune/sdk"
)

// ErrConfinement is wrapped by every error about a path outside the sandbox.
var ErrConfinement = errors.New("path confinement violation")

var errClosed = errors.New("local sandbox: sandbox is closed")

type sandbox struct {
	root string // the sandbox directory, symlinks resolved
	info sdk.SandboxInfo
	env  map[string]string // base env of every command

	mu      sync.Mutex
	closed  bool
	groups  map[int]struct{} // process groups of running commands
	running sync.WaitGroup   // running Execs
}

func newSandbox(dir string, req sdk.CreateRequest) (*sandbox, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"repo", "home", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, sub), 0o755); err != nil {
			return nil, err
		}
	}
	labels, err := json.Marshal(req.Labels)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, labelsFile), labels, 0o600); err != nil {
		return nil, err
	}
	state, err := json.Marshal(map[string]string{"dir": root})
	if err != nil {
		return nil, err
	}
	s := &sandbox{
		root: root,
		info: sdk.SandboxInfo{
			ID:       root,
			RepoPath: filepath.Join(root, "repo"),
			HomePath: filepath.Join(root, "home"),
			State:    state,
		},
		env:    baseEnv(root),
		groups: map[int]struct{}{},
	}
	for k, v := range req.Env {
		s.env[k] = v
	}
	return s, nil
}

// baseEnv is a minimal environment: the host's PATH and locale, and HOME
// and TMPDIR inside the sandbox.
func baseEnv(root string) map[string]string {
	env := map[string]string{
		"PATH":   "/usr/local/bin:/usr/bin:/bin",
		"HOME":   filepath.Join(root, "home"),
		"TMPDIR": filepath.Join(root, "tmp"),
	}
	for _, k := range []string{"PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ"} {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			env[k] = v
		}
	}
	return env
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

// Close kills the commands still running and removes the sandbox
// directory. It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for pgid := range s.groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := removeAll(s.root); err != nil {
		return fmt.Errorf("local sandbox: remove %s: %w", s.root, err)
	}
	return nil
}

// abs makes p absolute (relative paths resolve against RepoPath) and checks
// that it lies inside the sandbox directory.
func (s *sandbox) abs(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.info.RepoPath, p)
	}
	p = filepath.Clean(p)
	if !s.inside(p) {
		return "", fmt.Errorf("local sandbox: %w: %s is outside the sandbox %s", ErrConfinement, p, s.root)
	}
	return p, nil
}

// resolve returns the real path of an existing sandbox path, following
// symlinks, and checks it stays inside the sandbox.
func (s *sandbox) resolve(p string) (string, error) {
	p, err := s.abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("local sandbox: %w", err)
	}
	if !s.inside(real) {
		return "", fmt.Errorf("local sandbox: %w: %s resolves to %s, outside the sandbox", ErrConfinement, p, real)
	}
	return real, nil
}

// resolveTarget returns where a copy to p writes: p's parent with symlinks
// resolved (it must stay inside the sandbox) joined with p's base name. The
// parent may not exist yet.
func (s *sandbox) resolveTarget(p string) (string, error) {
	p, err := s.abs(p)
	if err != nil {
		return "", err
	}
	if p == s.root {
		return "", fmt.Errorf("local sandbox: %w: cannot overwrite the sandbox directory", ErrConfinement)
	}
	parent, rest := filepath.Dir(p), ""
	for {
		real, err := filepath.EvalSymlinks(parent)
		if err == nil {
			parent = filepath.Join(real, rest)
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("local sandbox: %w", err)
		}
		if _, lerr := os.Lstat(parent); lerr == nil {
			return "", fmt.Errorf("local sandbox: %w: %s is a dangling symlink", ErrConfinement, parent)
		}
		rest = filepath.Join(filepath.Base(parent), rest)
		parent = filepath.Dir(parent)
	}
	if !s.inside(parent) {
		return "", fmt.Errorf("local sandbox: %w: %s resolves to %s, outside the sandbox", ErrConfinement, p, parent)
	}
	return filepath.Join(parent, filepath.Base(p)), nil
}

func (s *sandbox) inside(p string) bool {
	return p == s.root || strings.HasPrefix(p, s.root+string(filepath.Separator))
}
