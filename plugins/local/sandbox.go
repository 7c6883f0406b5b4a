package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/procgroup"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

var errClosed = fmt.Errorf("local sandbox: %w", sandboxkit.ErrClosed)

type sandbox struct {
	root   string // the sandbox directory, symlinks resolved
	info   sdk.SandboxInfo
	env    map[string]string // base env of every command
	runner sandboxkit.Runner
	// recovered: reattached by Recover; Close leaves the directory.
	recovered bool
}

func newSandbox(root string, req sdk.CreateRequest) (*sandbox, error) {
	for _, sub := range []string{"repo", "home", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, sub), 0o755); err != nil {
			return nil, err
		}
	}
	return openSandbox(root, sandboxkit.MergeEnv(baseEnv(root), req.Env))
}

// recoverSandbox reattaches to an existing sandbox directory. Closing it
// leaves the directory.
func recoverSandbox(root string) (*sandbox, error) {
	for _, sub := range []string{"repo", "home", "tmp"} {
		if fi, err := os.Stat(filepath.Join(root, sub)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s has no %s directory", root, sub)
		}
	}
	s, err := openSandbox(root, baseEnv(root))
	if s != nil {
		s.recovered = true
	}
	return s, err
}

func openSandbox(root string, env map[string]string) (*sandbox, error) {
	uid := os.Getuid() // commands run as this process's user: the host needs not ask
	return &sandbox{
		root: root,
		info: sdk.SandboxInfo{
			ID:       root,
			RepoPath: filepath.Join(root, "repo"),
			HomePath: filepath.Join(root, "home"),
			UID:      &uid,
		},
		env: env,
	}, nil
}

// markerEnv marks every process of a sandbox with the sandbox directory,
// so that Close and gc find the ones that left the command's process
// group (setsid, double fork) and kill them.
const markerEnv = "SANDDUNE_LOCAL_SANDBOX"

// marker is the environment entry of the sandbox at root.
func marker(root string) string { return markerEnv + "=" + root }

// baseEnv is a minimal environment: the host's PATH and locale, HOME and
// TMPDIR inside the sandbox, and the sandbox's marker.
func baseEnv(root string) map[string]string {
	return sandboxkit.MergeEnv(map[string]string{
		"PATH":    "/usr/local/bin:/usr/bin:/bin",
		"HOME":    filepath.Join(root, "home"),
		"TMPDIR":  filepath.Join(root, "tmp"),
		markerEnv: root,
	}, sandboxkit.HostEnv("PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ"))
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

// Close kills the commands still running, and every process they left
// behind, and removes the sandbox directory (a recovered sandbox's stays).
// It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.runner.Close()
	if err := s.runner.Wait(ctx); err != nil {
		return err
	}
	if s.recovered {
		return nil
	}
	if err := procgroup.KillMarked(marker(s.root)); err != nil {
		return fmt.Errorf("local sandbox: %w", err)
	}
	if err := sandboxkit.RemoveAll(s.root); err != nil {
		return fmt.Errorf("local sandbox: remove %s: %w", s.root, err)
	}
	return nil
}

// path maps a sandbox path to an absolute one (relative paths resolve
// against RepoPath and must stay inside it).
func (s *sandbox) path(p string) (string, error) {
	abs, err := sandboxkit.SandboxPath(p, s.info.RepoPath)
	if err != nil {
		return "", fmt.Errorf("local sandbox: %w", err)
	}
	return abs, nil
}

// area is the sandbox directory: repo, home and tmp.
func (s *sandbox) area() sandboxkit.Area { return sandboxkit.Area{s.root} }
