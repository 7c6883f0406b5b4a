package bubblewrap

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// dirPrefix names sandbox directories under os.TempDir(); each holds home/,
// tmp/ and labels.json (read by ListResources).
const dirPrefix = "sanddune-bwrap-"

// hostEnv are host variables every sandbox inherits (never credentials).
var hostEnv = []string{"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "USER", "LOGNAME", "SHELL"}

// waitDelay bounds how long Exec waits for output after the process ended
// or was killed: background processes may hold the output pipes open.
const waitDelay = 2 * time.Second

// execMarker is set in every Exec's environment with a random value, so
// that cancellation finds every process the Exec started.
const execMarker = "SANDDUNE_EXEC"

// State is what Info().State holds (JSON).
type State struct {
	Dir string `json:"dir"`
}

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
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	s := &sandbox{dir: dir, bwrap: bwrap, netNone: cfg.NetworkNone, running: map[int]struct{}{}}
	if err := s.setup(cfg, req); err != nil {
		_ = removeAll(dir)
		return nil, err
	}
	if s.keeper, err = startKeeper(bwrap); err != nil {
		_ = removeAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *sandbox) setup(cfg config, req sdk.CreateRequest) error {
	labels, _ := json.Marshal(req.Labels)
	if err := os.WriteFile(filepath.Join(s.dir, "labels.json"), labels, 0o600); err != nil {
		return err
	}
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
		src, err := resolveHostPath(m.HostPath, req.HostRepoPath)
		if err != nil {
			return fmt.Errorf("mount.%d: %w", i, err)
		}
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("mount.%d: host_path %q (resolved to %s) does not exist", i, m.HostPath, src)
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

	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	for _, h := range cfg.Hide {
		hidden, isDir, ok := s.hidden(h)
		switch {
		case !ok:
		case isDir:
			args = append(args, "--tmpfs", hidden)
		default:
			args = append(args, "--ro-bind", "/dev/null", hidden)
		}
	}
	for _, r := range s.roots {
		flag := "--bind"
		if r.readOnly {
			flag = "--ro-bind"
		}
		args = append(args, flag, r.host, r.sandbox)
	}
	s.mounts = args

	env := map[string]string{}
	for _, k := range hostEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for _, layer := range []map[string]string{req.Env, cfg.Env} {
		for k, v := range layer {
			env[k] = v
		}
	}
	env["HOME"] = s.home
	env["TMPDIR"] = "/tmp"
	s.env = env
	state, _ := json.Marshal(State{Dir: s.dir})
	s.info = sdk.SandboxInfo{ID: s.dir, RepoPath: s.repo, HomePath: s.home, State: state}
	return nil
}

// hidden resolves a hide entry to an existing host path that does not
// contain any bound path (covering those would break the sandbox).
func (s *sandbox) hidden(h string) (p string, isDir, ok bool) {
	p, err := expandHome(h)
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
		if within(r.sandbox, p) || within(r.host, p) {
			return "", false, false
		}
	}
	return p, fi.IsDir(), true
}

// sandbox is one bwrap sandbox: a directory, a keeper holding the PID
// namespace every Exec joins, and the mount arguments every Exec shares.
type sandbox struct {
	dir, bwrap string
	repo, home string
	roots      []root
	mounts     []string
	netNone    bool
	env        map[string]string
	info       sdk.SandboxInfo
	keeper     *keeper

	mu      sync.Mutex
	closed  bool
	running map[int]struct{} // bwrap pids (= their process groups)
	wg      sync.WaitGroup
}

var errClosed = errors.New("sandbox is closed")

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

// Exec runs argv (or `sh -c shell`) in a fresh bwrap (own mount, IPC and
// UTS namespaces) that joins the sandbox's PID namespace, so processes
// outlive their Exec like in a container and pids mean the same in every
// Exec. Cancellation and timeouts SIGKILL bwrap's process group and then
// every process carrying the Exec's marker variable, however detached.
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	var argv []string
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return sdk.ExecResult{}, errors.New("exec: set either argv or shell, not both")
	case len(req.Argv) > 0:
		argv = req.Argv
	case req.Shell != "":
		argv = []string{"sh", "-c", req.Shell}
	default:
		return sdk.ExecResult{}, errors.New("exec: empty command")
	}
	if req.Sudo {
		return sdk.ExecResult{}, fmt.Errorf("bubblewrap: sudo: %w", sdk.ErrNotSupported)
	}
	cwd, err := s.resolveCwd(req.Cwd)
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("exec: cwd: %w", err)
	}
	nsArgs, files := s.keeper.joinArgs()
	args := append(nsArgs, namespaceArgs(s.netNone)...)
	args = append(append(args, s.mounts...), "--chdir", cwd, "--")
	cmd := exec.Command(s.bwrap, append(args, argv...)...)
	cmd.ExtraFiles = files
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	for k, v := range req.Env {
		env[k] = v
	}
	marker := execMarker + "=" + randomHex()
	cmd.Env = append(envList(env), marker)
	if req.Stdin != nil {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	out = sdk.SyncOutput(out)
	stdout, stderr := sdk.NewLineWriter(sdk.Stdout, out), sdk.NewLineWriter(sdk.Stderr, out)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = waitDelay

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return sdk.ExecResult{}, errClosed
	}
	if !s.keeper.alive() {
		s.mu.Unlock()
		return sdk.ExecResult{}, errors.New("exec: the sandbox's keeper process died")
	}
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return sdk.ExecResult{}, fmt.Errorf("exec: start bwrap: %w", err)
	}
	pid := cmd.Process.Pid
	s.running[pid] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, pid)
		s.mu.Unlock()
		s.wg.Done()
	}()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res sdk.ExecResult
	select {
	case err = <-done:
	case <-ctx.Done():
		killTree(pid, marker)
		<-done
		_, _ = stdout.Close(), stderr.Close()
		return sdk.ExecResult{ExitCode: -1}, ctx.Err()
	case <-timeout:
		killTree(pid, marker)
		err = <-done
		res.TimedOut = true
	}
	_, _ = stdout.Close(), stderr.Close()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return res, fmt.Errorf("exec: %w", err)
	}
	res.ExitCode = exitCode(cmd.ProcessState)
	return res, nil
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Close kills every process of the sandbox (the keeper is the PID
// namespace's init: the kernel kills the rest) and removes the sandbox
// directory. It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	for pid := range s.running {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	s.mu.Unlock()
	if already {
		return nil
	}
	s.keeper.stop()
	s.wg.Wait()
	if err := removeAll(s.dir); err != nil {
		return fmt.Errorf("remove sandbox dir: %w", err)
	}
	return nil
}

// removeAll removes a tree, making read-only directories writable first if
// needed (agents do chmod things).
func removeAll(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func (s *sandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// toHost maps a sandbox path (absolute, or relative to RepoPath) to its
// host path and root. It is lexical: callers resolve symlinks.
func (s *sandbox) toHost(p string) (string, root, error) {
	abs := filepath.Clean(p)
	if !filepath.IsAbs(p) {
		abs = filepath.Join(s.repo, p)
		if !within(abs, s.repo) {
			return "", root{}, fmt.Errorf("path %q leaves the worktree", p)
		}
	}
	best := -1
	for i, r := range s.roots {
		if within(abs, r.sandbox) && (best < 0 || len(r.sandbox) > len(s.roots[best].sandbox)) {
			best = i
		}
	}
	if best < 0 {
		return "", root{}, fmt.Errorf("path %q is outside the sandbox's writable area (worktree, home, /tmp, mounts)", p)
	}
	r := s.roots[best]
	rel, _ := filepath.Rel(r.sandbox, abs)
	return filepath.Join(r.host, rel), r, nil
}

// confined resolves the symlinks of an existing host path and checks that
// the result is still inside one of the sandbox's host roots.
func (s *sandbox) confined(hostPath string) (string, error) {
	real, err := filepath.EvalSymlinks(hostPath)
	if err != nil {
		return "", err
	}
	for _, r := range s.roots {
		if within(real, r.host) {
			return real, nil
		}
	}
	return "", fmt.Errorf("%s resolves outside the sandbox", hostPath)
}

func (s *sandbox) resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		return s.repo, nil
	}
	host, r, err := s.toHost(cwd)
	if err != nil {
		return "", err
	}
	if _, err := s.confined(host); err != nil {
		return "", err
	}
	rel, _ := filepath.Rel(r.host, host)
	return filepath.Join(r.sandbox, rel), nil
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+string(filepath.Separator))
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
