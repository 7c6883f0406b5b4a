package bubblewrap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/internal/mounts"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// dirs are the sandbox directories under os.TempDir(); each holds home/,
// tmp/ and labels.json (read by ListResources).
var dirs = sandboxkit.TempDirs{Prefix: "sanddune-bwrap-", LabelsFile: "labels.json"}

// hostEnv are host variables every sandbox inherits (never credentials).
var hostEnv = []string{"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "USER", "LOGNAME", "SHELL"}

// execMarker is set in every Exec's environment with a random value, so
// that cancellation finds every process the Exec started.
const execMarker = "SANDDUNE_EXEC"

// root maps a sandbox path prefix to the host path it is bound from.
type root struct {
	sandbox, host string
	readOnly      bool
}

// Create prepares a sandbox directory (home, /tmp) and the bwrap arguments
// every Exec shares. Nothing runs until Exec.
func (p *Provider) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	cfg, diags := decodeConfig(req.Config)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, errors.New("bubblewrap (bwrap) is not installed")
	}
	dir, err := dirs.Create("", req.Labels)
	if err != nil {
		return nil, err
	}
	s := &sandbox{dir: dir, bwrap: bwrap, netNone: cfg.NetworkNone}
	if req.Egress != nil {
		if s.egress, err = newEgressGuard(*req.Egress); err != nil {
			_ = sandboxkit.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.setup(cfg, req); err != nil {
		_ = sandboxkit.RemoveAll(dir)
		return nil, err
	}
	if s.keeper, err = startKeeper(bwrap); err != nil {
		_ = sandboxkit.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *sandbox) setup(cfg config, req sdk.CreateRequest) error {
	s.home = filepath.Join(s.dir, "home")
	tmp := filepath.Join(s.dir, "tmp")
	for _, d := range []string{s.home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	s.repo = req.WorktreePath
	if s.repo == "" {
		s.repo = filepath.Join(s.dir, "workspace")
		if err := os.Mkdir(s.repo, 0o700); err != nil {
			return err
		}
	}
	if !filepath.IsAbs(s.repo) {
		return fmt.Errorf("worktree path %q is not absolute", s.repo)
	}
	s.repo = filepath.Clean(s.repo)

	s.roots = []root{{"/tmp", tmp, false}, {s.home, s.home, false}, {s.repo, s.repo, false}}
	for _, g := range req.GitMounts {
		dst := g.SandboxPath
		if dst == "" {
			dst = g.HostPath
		}
		if !filepath.IsAbs(g.HostPath) || !filepath.IsAbs(dst) {
			return fmt.Errorf("git mount %q: paths must be absolute", g.HostPath)
		}
		s.roots = append(s.roots, root{filepath.Clean(dst), filepath.Clean(g.HostPath), g.ReadOnly})
	}
	for i, m := range cfg.Mounts {
		src, err := m.Source(req.HostRepoPath)
		if err != nil {
			return fmt.Errorf("mount.%d: %w", i, err)
		}
		dst := m.SandboxPath
		switch {
		case dst == "":
			dst = src
		case dst == "~" || strings.HasPrefix(dst, "~/"):
			dst = filepath.Join(s.home, dst[1:])
		case !filepath.IsAbs(dst):
			dst = filepath.Join(s.repo, dst)
		}
		s.roots = append(s.roots, root{filepath.Clean(dst), src, m.ReadOnly})
	}

	s.hide = cfg.Hide
	for _, r := range s.roots {
		flag := "--bind"
		if r.readOnly {
			flag = "--ro-bind"
		}
		s.binds = append(s.binds, flag, r.host, r.sandbox)
	}

	env := sandboxkit.MergeEnv(sandboxkit.HostEnv(hostEnv...), req.Env)
	env["HOME"] = s.home
	env["TMPDIR"] = "/tmp"
	s.env = env
	uid := os.Getuid() // no user namespace: commands run as this process's user
	s.info = sdk.SandboxInfo{ID: s.dir, RepoPath: s.repo, HomePath: s.home, UID: &uid}
	return nil
}

// hidden resolves a hide entry to an existing host path that does not
// contain any bound path (covering those would break the sandbox).
func (s *sandbox) hidden(h string) (p string, isDir, ok bool) {
	p, err := mounts.ExpandHome(h)
	if err != nil {
		return "", false, false
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return "", false, false
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", false, false
	}
	for _, r := range s.roots {
		if sandboxkit.Within(r.sandbox, p) || sandboxkit.Within(r.host, p) {
			return "", false, false
		}
	}
	return p, fi.IsDir(), true
}

// sandbox is one bwrap sandbox: a directory, a keeper holding the PID
// namespace every Exec joins, and what every Exec mounts: the bind
// arguments of its roots and the hide entries (resolved at each Exec).
type sandbox struct {
	dir, bwrap string
	repo, home string
	roots      []root
	binds      []string
	hide       []string
	netNone    bool
	env        map[string]string
	info       sdk.SandboxInfo
	keeper     *keeper
	runner     sandboxkit.Runner
	egress     *egressGuard // nil without an egress policy
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

// Close kills every process of the sandbox (the keeper is the PID
// namespace's init: the kernel kills the rest) and removes the sandbox
// directory. It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	if s.runner.Close() {
		return nil
	}
	s.keeper.stop()
	_ = s.runner.Wait(context.Background())
	if s.egress != nil {
		s.egress.monitor.End(nil)
	}
	if err := sandboxkit.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove sandbox dir: %w", err)
	}
	return nil
}

// toHost maps a sandbox path (absolute, or relative to RepoPath) to its
// host path and root. It is lexical: callers resolve symlinks.
func (s *sandbox) toHost(p string) (string, root, error) {
	abs, err := sandboxkit.SandboxPath(p, s.repo)
	if err != nil {
		return "", root{}, err
	}
	best := -1
	for i, r := range s.roots {
		if sandboxkit.Within(abs, r.sandbox) && (best < 0 || len(r.sandbox) > len(s.roots[best].sandbox)) {
			best = i
		}
	}
	if best < 0 {
		return "", root{}, fmt.Errorf("%w: %q is outside the sandbox's writable area (worktree, home, /tmp, mounts)", sdk.ErrConfinement, p)
	}
	r := s.roots[best]
	rel, _ := filepath.Rel(r.sandbox, abs)
	return filepath.Join(r.host, rel), r, nil
}

// hostRoots are the host directories sandbox paths map to; writable
// leaves out the read-only ones.
func (s *sandbox) hostRoots(writable bool) sandboxkit.Area {
	var roots sandboxkit.Area
	for _, r := range s.roots {
		if !writable || !r.readOnly {
			roots = append(roots, r.host)
		}
	}
	return roots
}

func (s *sandbox) resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		return s.repo, nil
	}
	host, r, err := s.toHost(cwd)
	if err != nil {
		return "", err
	}
	if err := s.hostRoots(false).Dir(host); err != nil {
		return "", err
	}
	rel, _ := filepath.Rel(r.host, host)
	return filepath.Join(r.sandbox, rel), nil
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var _ sdk.TTYSandbox = (*sandbox)(nil)
