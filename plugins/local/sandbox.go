package local

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// ErrConfinement is wrapped by every error about a path outside the sandbox.
var ErrConfinement = sandboxkit.ErrConfinement

var errClosed = fmt.Errorf("local sandbox: %w", sandboxkit.ErrClosed)

type sandbox struct {
	root   string // the sandbox directory, symlinks resolved
	info   sdk.SandboxInfo
	env    map[string]string // base env of every command
	runner sandboxkit.Runner
}

func newSandbox(root string, req sdk.CreateRequest) (*sandbox, error) {
	for _, sub := range []string{"repo", "home", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, sub), 0o755); err != nil {
			return nil, err
		}
	}
	state, err := json.Marshal(map[string]string{"dir": root})
	if err != nil {
		return nil, err
	}
	return &sandbox{
		root: root,
		info: sdk.SandboxInfo{
			ID:       root,
			RepoPath: filepath.Join(root, "repo"),
			HomePath: filepath.Join(root, "home"),
			State:    state,
		},
		env: sandboxkit.MergeEnv(baseEnv(root), req.Env),
	}, nil
}

// baseEnv is a minimal environment: the host's PATH and locale, and HOME
// and TMPDIR inside the sandbox.
func baseEnv(root string) map[string]string {
	return sandboxkit.MergeEnv(map[string]string{
		"PATH":   "/usr/local/bin:/usr/bin:/bin",
		"HOME":   filepath.Join(root, "home"),
		"TMPDIR": filepath.Join(root, "tmp"),
	}, sandboxkit.HostEnv("PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ"))
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

// Close kills the commands still running and removes the sandbox
// directory. It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.runner.Close()
	if err := s.runner.Wait(ctx); err != nil {
		return err
	}
	if err := sandboxkit.RemoveAll(s.root); err != nil {
		return fmt.Errorf("local sandbox: remove %s: %w", s.root, err)
	}
	return nil
}

// abs makes p absolute: relative paths resolve against RepoPath.
func (s *sandbox) abs(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.Join(s.info.RepoPath, p)
	}
	return p
}

// resolve returns the real path of an existing sandbox path, following
// symlinks, and checks it stays inside the sandbox directory.
func (s *sandbox) resolve(p string) (string, error) {
	real, err := sandboxkit.Resolve(s.abs(p), s.root)
	if err != nil {
		return "", fmt.Errorf("local sandbox: %w", err)
	}
	return real, nil
}
