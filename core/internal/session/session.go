package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/core/internal/tempdir"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// Transfer is one session moved between a sandbox and the host.
type Transfer struct {
	Sandbox sdk.Sandbox
	// Agent rewrites the cwd fields (its RewriteSession) under Config.
	Agent   sdk.AgentProvider
	Config  sdk.Config
	Storage sdk.SessionStorage
	// SessionID is the session to move: the iteration's session id on
	// capture, resume_session on resume.
	SessionID string
	// SandboxRepo and SandboxHome default to the sandbox's Info().
	SandboxRepo, SandboxHome string
	// HostRepo is the host repository root; HostHome defaults to the
	// user's home directory.
	HostRepo, HostHome string
	// Mounts are sandbox directories that are host directories (the
	// sandbox's Info().Mounts the host asked for): session files inside
	// are read and written there, with no copy through the sandbox.
	Mounts []sdk.Mount
	// Logger receives warnings about companion files; nil discards them.
	Logger hclog.Logger
}

// ErrResumeUnsupported and ErrForkUnsupported are returned by CheckResume.
var (
	ErrResumeUnsupported = errors.New("the agent cannot resume sessions")
	ErrForkUnsupported   = errors.New("the agent cannot fork sessions")
)

// NotFoundError says that a session file does not exist where the agent
// keeps it.
type NotFoundError struct {
	SessionID string
	// Path is where the file was expected ('*' where the CLI adds a date or
	// prefix of its own).
	Path string
	// InSandbox is set when the file was looked for in the sandbox.
	InSandbox bool
}

func (e *NotFoundError) Error() string {
	where := "on the host"
	if e.InSandbox {
		where = "in the sandbox"
	}
	return fmt.Sprintf("session %q not found %s: expected session file at %s", e.SessionID, where, e.Path)
}

// execTimeout bounds each command run in the sandbox.
const execTimeout = 2 * time.Minute

// CheckResume says whether an agent with this description can resume (or
// fork) a session; the engine reports a failure as a config diagnostic
// before any sandbox starts.
func CheckResume(desc sdk.AgentDescription, fork bool) error {
	if !desc.Resume || desc.Sessions == nil {
		return ErrResumeUnsupported
	}
	if fork && !desc.Fork {
		return ErrForkUnsupported
	}
	return nil
}

// CaptureEnabled says whether sessions should be captured after each
// iteration: the agent has session storage and asks for capture.
func CaptureEnabled(desc sdk.AgentDescription) bool {
	return desc.Sessions != nil && desc.CaptureSessions
}

// FindHost returns the host path of a session (the newest match when the
// pattern has wildcards), or a *NotFoundError naming the expected path.
func FindHost(ctx context.Context, agent sdk.AgentProvider, s sdk.SessionStorage, hostRepo, hostHome, sessionID string) (string, error) {
	f, _, err := findHost(ctx, agent, s, hostSide(hostRepo, hostHome), sessionID)
	return f, err
}

func findHost(ctx context.Context, agent sdk.AgentProvider, s sdk.SessionStorage, host side, id string) (string, []string, error) {
	if err := agentkit.CheckSessionID(id); err != nil {
		return "", nil, err
	}
	p, err := expand(ctx, agent, s, host, id)
	if err != nil {
		return "", nil, err
	}
	matches, err := filepath.Glob(p.glob())
	if err != nil {
		return "", nil, err
	}
	var best string
	var bestVals []string
	var bestTime time.Time
	for _, m := range matches {
		vals, ok := p.match(m)
		st, err := os.Stat(m)
		if !ok || err != nil || !st.Mode().IsRegular() {
			continue
		}
		if best == "" || st.ModTime().After(bestTime) {
			best, bestVals, bestTime = m, vals, st.ModTime()
		}
	}
	if best == "" {
		return "", nil, &NotFoundError{SessionID: id, Path: p.String()}
	}
	return best, bestVals, nil
}

func hostSide(repo, home string) side {
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if real, err := filepath.EvalSymlinks(repo); err == nil {
		repo = real
	}
	return side{home: filepath.Clean(home), cwd: filepath.Clean(repo)}
}

func (t *Transfer) sides() (sandbox, host side, err error) {
	if t.Sandbox == nil || t.Agent == nil {
		return side{}, side{}, errors.New("session transfer needs a sandbox and an agent")
	}
	if err := agentkit.CheckSessionID(t.SessionID); err != nil {
		return side{}, side{}, err
	}
	info := t.Sandbox.Info()
	sandbox = side{home: t.SandboxHome, cwd: t.SandboxRepo}
	if sandbox.home == "" {
		sandbox.home = info.HomePath
	}
	if sandbox.cwd == "" {
		sandbox.cwd = info.RepoPath
	}
	if sandbox.home == "" || sandbox.cwd == "" || t.HostRepo == "" {
		return side{}, side{}, errors.New("session transfer needs the sandbox home and repo paths and the host repo path")
	}
	sandbox = side{home: path.Clean(sandbox.home), cwd: path.Clean(sandbox.cwd)}
	if len(t.Mounts) > 0 {
		t.Sandbox = mounted{Sandbox: t.Sandbox, mounts: t.Mounts}
	}
	return sandbox, hostSide(t.HostRepo, t.HostHome), nil
}

func (t *Transfer) logger() hclog.Logger {
	if t.Logger == nil {
		return hclog.NewNullLogger()
	}
	return t.Logger
}

// Capture copies the session from the sandbox to where the CLI's own resume
// finds it on the host, with its cwd fields rewritten to the host repo, and
// returns the host path. The engine reports an error as a warning.
func Capture(ctx context.Context, t Transfer) (string, error) {
	sb, host, err := t.sides()
	if err != nil {
		return "", err
	}
	sp, err := expand(ctx, t.Agent, t.Storage, sb, t.SessionID)
	if err != nil {
		return "", err
	}
	hp, err := expand(ctx, t.Agent, t.Storage, host, t.SessionID)
	if err != nil {
		return "", err
	}
	tmp, err := tempdir.Make("session")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if len(sp.parts) == 1 { // no wildcard: the sandbox path is known
		hostPath, _ := hp.fill(nil)
		if ok, err := t.captureKnown(ctx, sp.parts[0], hostPath, tmp, sb.cwd, host.cwd); ok || err != nil {
			return hostPath, err
		}
	}
	files, err := t.listSandbox(ctx, sp)
	if err != nil {
		return "", err
	}
	var main string
	var vals []string
	for _, f := range files { // newest first
		if v, ok := sp.match(f); ok {
			main, vals = f, v
			break
		}
	}
	if main == "" {
		return "", &NotFoundError{SessionID: t.SessionID, Path: sp.String(), InSandbox: true}
	}
	hostPath, err := hp.fill(vals)
	if err != nil {
		return "", err
	}
	if err := t.copyOut(ctx, main, hostPath, tmp, sb.cwd, host.cwd); err != nil {
		return "", err
	}
	if cd := companionDir(main); cd != "" {
		for _, f := range files {
			if rel, ok := strings.CutPrefix(f, cd+"/"); ok && rel != "" {
				dst := filepath.Join(companionDir(hostPath), filepath.FromSlash(rel))
				if err := t.copyOut(ctx, f, dst, tmp, sb.cwd, host.cwd); err != nil {
					t.logger().Warn("session companion file not captured", "file", f, "error", err)
				}
			}
		}
	}
	return hostPath, nil
}

// captureKnown copies the session file at src and its companion directory
// out of the sandbox at once (two concurrent copies, no listing), and writes
// them under dst. ok is false when src could not be copied: the caller then
// looks for the session with find, which tells a missing one from a failure.
func (t *Transfer) captureKnown(ctx context.Context, src, dst, tmp, fromCwd, toCwd string) (ok bool, err error) {
	cd := companionDir(src)
	localDir := filepath.Join(tmp, "companion")
	var cdErr error
	var wg sync.WaitGroup
	if cd != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cdErr = t.Sandbox.CopyOut(ctx, cd, localDir)
		}()
	}
	local := filepath.Join(tmp, "main")
	err = t.Sandbox.CopyOut(ctx, src, local)
	wg.Wait()
	if err != nil {
		t.logger().Debug("session file not copied directly, looking for it", "file", src, "error", err)
		return false, nil
	}
	if err := t.convert(ctx, local, dst, fromCwd, toCwd); err != nil {
		return true, fmt.Errorf("session file %s: %w", src, err)
	}
	switch {
	case cd == "":
	case cdErr != nil:
		if !errors.Is(cdErr, sdk.ErrNotFound) {
			t.logger().Warn("session companion directory not captured", "dir", cd, "error", cdErr)
		}
	default:
		_ = filepath.WalkDir(localDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			rel, _ := filepath.Rel(localDir, p)
			if err := t.convert(ctx, p, filepath.Join(companionDir(dst), rel), fromCwd, toCwd); err != nil {
				t.logger().Warn("session companion file not captured", "file", path.Join(cd, filepath.ToSlash(rel)), "error", err)
			}
			return nil
		})
	}
	return true, nil
}

// listSandbox lists, newest first, the sandbox files that may match p and
// the files in their companion directories (all the files below p's root
// when that is inside a mount).
func (t *Transfer) listSandbox(ctx context.Context, p pattern) ([]string, error) {
	if m, ok := t.Sandbox.(mounted); ok {
		if files, ok, err := m.list(p.root()); ok {
			return files, err
		}
	}
	g := p.glob()
	match := []string{"-path", g}
	if d := companionDir(g); d != "" {
		match = []string{"(", "-path", g, "-o", "-path", d + "/*", ")"}
	}
	argv := append(append([]string{"find", p.root(), "-type", "f"}, match...), "-exec", "ls", "-1t", "--", "{}", "+")
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	var out, errOut strings.Builder
	var cur *strings.Builder
	res, err := t.Sandbox.Exec(ctx, sdk.ExecRequest{Argv: argv, Timeout: execTimeout}, func(l sdk.OutputLine) {
		cur = &out
		if l.Stream == sdk.Stderr {
			cur = &errOut
		}
		cur.Write(l.Text)
		if !l.Partial {
			cur.WriteByte('\n')
		}
	})
	if err != nil {
		return nil, fmt.Errorf("looking for session %q in the sandbox: %w", t.SessionID, err)
	}
	var files []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" {
			files = append(files, l)
		}
	}
	if len(files) == 0 && res.ExitCode != 0 && !strings.Contains(errOut.String(), "No such file") {
		return nil, fmt.Errorf("looking for session %q in the sandbox: find exited %d: %s", t.SessionID, res.ExitCode, strings.TrimSpace(errOut.String()))
	}
	return files, nil
}

// copyOut copies one sandbox file to dst on the host, rewriting its cwd.
func (t *Transfer) copyOut(ctx context.Context, src, dst, tmp, fromCwd, toCwd string) error {
	local := filepath.Join(tmp, "out")
	_ = os.Remove(local)
	if err := t.Sandbox.CopyOut(ctx, src, local); err != nil {
		return fmt.Errorf("copying session file %s out of the sandbox: %w", src, err)
	}
	if err := t.convert(ctx, local, dst, fromCwd, toCwd); err != nil {
		return fmt.Errorf("session file %s: %w", src, err)
	}
	return nil
}

// convert writes the copied-out file local to dst with its cwd rewritten.
func (t *Transfer) convert(ctx context.Context, local, dst, fromCwd, toCwd string) error {
	data, err := os.ReadFile(local)
	if err != nil {
		return err
	}
	data, err = t.Agent.RewriteSession(ctx, sdk.RewriteSessionRequest{Config: t.Config, Data: data, FromCwd: fromCwd, ToCwd: toCwd})
	if err != nil {
		return fmt.Errorf("rewriting: %w", err)
	}
	return writeAtomic(dst, data)
}

// writeAtomic writes a private file via a temp file in the same directory.
func writeAtomic(dst string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".sanddune-*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// PrepareResume copies a host session into the sandbox, where the CLI's
// resume flag finds it, with its cwd fields rewritten to the sandbox repo,
// and returns the sandbox path. A missing host file is a *NotFoundError.
func PrepareResume(ctx context.Context, t Transfer) (string, error) {
	sb, host, err := t.sides()
	if err != nil {
		return "", err
	}
	hostPath, vals, err := findHost(ctx, t.Agent, t.Storage, host, t.SessionID)
	if err != nil {
		return "", err
	}
	sp, err := expand(ctx, t.Agent, t.Storage, sb, t.SessionID)
	if err != nil {
		return "", err
	}
	sandboxPath, err := sp.fill(vals)
	if err != nil {
		return "", err
	}
	type file struct{ host, sandbox string }
	files := []file{{hostPath, sandboxPath}}
	if cdir := companionDir(hostPath); cdir != "" {
		_ = filepath.WalkDir(cdir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				rel, _ := filepath.Rel(cdir, p)
				files = append(files, file{p, companionDir(sandboxPath) + "/" + filepath.ToSlash(rel)})
			}
			return nil
		})
	}
	var dirs []string
	for _, f := range files {
		if d := path.Dir(f.sandbox); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if err := t.mkdirs(ctx, dirs); err != nil {
		return "", err
	}
	tmp, err := tempdir.Make("session")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for i, f := range files {
		err := t.copyIn(ctx, f.host, f.sandbox, filepath.Join(tmp, fmt.Sprint(i)), host.cwd, sb.cwd)
		if err != nil && i == 0 {
			return "", err
		}
		if err != nil {
			t.logger().Warn("session companion file not copied into the sandbox", "file", f.host, "error", err)
		}
	}
	return sandboxPath, nil
}

func (t *Transfer) mkdirs(ctx context.Context, dirs []string) error {
	if m, ok := t.Sandbox.(mounted); ok && m.mkdirs(dirs) == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	var msg strings.Builder
	res, err := t.Sandbox.Exec(ctx, sdk.ExecRequest{Argv: append([]string{"mkdir", "-p", "--"}, dirs...), Timeout: execTimeout}, func(l sdk.OutputLine) {
		msg.Write(l.Text)
		msg.WriteByte('\n')
	})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("mkdir exited %d: %s", res.ExitCode, strings.TrimSpace(msg.String()))
	}
	if err != nil {
		return fmt.Errorf("creating the session directory in the sandbox: %w", err)
	}
	return nil
}

// copyIn copies one host file into the sandbox, rewriting its cwd.
func (t *Transfer) copyIn(ctx context.Context, src, dst, local, fromCwd, toCwd string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	data, err = t.Agent.RewriteSession(ctx, sdk.RewriteSessionRequest{Config: t.Config, Data: data, FromCwd: fromCwd, ToCwd: toCwd})
	if err != nil {
		return fmt.Errorf("rewriting session file %s: %w", src, err)
	}
	// Readable by the sandbox user whatever owner CopyIn gives it.
	if err := os.WriteFile(local, data, 0o644); err != nil {
		return err
	}
	if err := t.Sandbox.CopyIn(ctx, local, dst); err != nil {
		return fmt.Errorf("copying session file into the sandbox at %s: %w", dst, err)
	}
	return nil
}
