package local

import (
	"context"
	"errors"
	"fmt"
	"io"
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

const (
	// killGrace is how long a cancelled or timed-out command gets between
	// SIGTERM and SIGKILL.
	killGrace = 2 * time.Second
	// drainDelay bounds the wait for output once the process group is
	// gone: a process that left the group may still hold the pipes.
	drainDelay = 2 * time.Second
)

// Exec runs a command in its own process group.
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return sdk.ExecResult{}, err
	}
	argv := req.Argv
	switch {
	case req.Sudo:
		return sdk.ExecResult{}, errors.New("local sandbox: sudo is not supported: commands run as the user running sanddune")
	case len(argv) > 0 && req.Shell != "":
		return sdk.ExecResult{}, errors.New("local sandbox: exec request sets both argv and shell")
	case req.Shell != "":
		argv = []string{"/bin/sh", "-c", req.Shell}
	case len(argv) == 0 || argv[0] == "":
		return sdk.ExecResult{}, errors.New("local sandbox: exec request has no command")
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = s.info.RepoPath
	}
	dir, err := s.resolve(cwd)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	env := make(map[string]string, len(s.env)+len(req.Env))
	for k, v := range s.env {
		env[k] = v
	}
	for k, v := range req.Env {
		env[k] = v
	}
	path, err := lookPath(argv[0], env["PATH"], dir)
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("local sandbox: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Dir:         dir,
		Env:         envList(env),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	p, err := newPipes(req.Stdin != nil)
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("local sandbox: %w", err)
	}
	defer p.closeParent()
	cmd.Stdout, cmd.Stderr = p.childOut, p.childErr
	if p.childIn != nil {
		cmd.Stdin = p.childIn
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return sdk.ExecResult{}, errClosed
	}
	err = cmd.Start()
	if err == nil {
		s.groups[cmd.Process.Pid] = struct{}{}
		s.running.Add(1)
	}
	s.mu.Unlock()
	p.closeChild()
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("local sandbox: %w", err)
	}
	pgid := cmd.Process.Pid
	defer func() {
		s.mu.Lock()
		delete(s.groups, pgid)
		s.mu.Unlock()
		s.running.Done()
	}()

	if req.Stdin != nil {
		go func() {
			_, _ = p.stdin.Write(req.Stdin)
			_ = p.stdin.Close()
		}()
	}
	drained := p.stream(out)

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res sdk.ExecResult
	var waitErr, ctxErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		waitErr = terminate(pgid, waited)
	case <-timeout:
		res.TimedOut = true
		waitErr = terminate(pgid, waited)
	}
	// Nothing the command started outlives it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-drained:
	case <-time.After(drainDelay):
		p.closeParent()
		<-drained
	}

	res.ExitCode = exitCode(cmd.ProcessState)
	if ctxErr != nil {
		return res, ctxErr
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, fmt.Errorf("local sandbox: %w", waitErr)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return res, errClosed
	}
	return res, nil
}

// terminate sends SIGTERM to the process group, then SIGKILL after
// killGrace unless the leader exited, and returns the leader's Wait error.
func terminate(pgid int, waited <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case err := <-waited:
		return err
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return <-waited
	}
}

// exitCode follows the shell convention: 128+n for a death by signal n.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lookPath finds name in the command's own PATH (not sanddune's);
// relative names with a slash resolve against the working directory.
func lookPath(name, pathEnv, dir string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return name, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: %w in the sandbox PATH", name, exec.ErrNotFound)
}

func envList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}

// pipes connects a command's stdio to the provider. The parent ends are
// closed exactly once, either after the output drained or to abandon it.
type pipes struct {
	childIn, childOut, childErr *os.File // nil childIn: /dev/null
	stdin, stdout, stderr       *os.File
	closeOnce                   sync.Once
}

func newPipes(withStdin bool) (*pipes, error) {
	p := &pipes{}
	var err error
	if p.stdout, p.childOut, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.stderr, p.childErr, err = os.Pipe(); err != nil {
		p.closeChild()
		p.closeParent()
		return nil, err
	}
	if withStdin {
		if p.childIn, p.stdin, err = os.Pipe(); err != nil {
			p.closeChild()
			p.closeParent()
			return nil, err
		}
	}
	return p, nil
}

// closeChild closes the ends the child inherited.
func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.childIn, p.childOut, p.childErr} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeParent closes the provider's ends, unblocking pending reads and writes.
func (p *pipes) closeParent() {
	p.closeOnce.Do(func() {
		for _, f := range []*os.File{p.stdin, p.stdout, p.stderr} {
			if f != nil {
				_ = f.Close()
			}
		}
	})
}

// stream sends stdout and stderr lines to out, one call at a time, and
// closes the returned channel once both reached EOF.
func (p *pipes) stream(out sdk.OutputFunc) <-chan struct{} {
	out = sdk.SyncOutput(out)
	var wg sync.WaitGroup
	for _, src := range []struct {
		r      io.Reader
		stream sdk.Stream
	}{{p.stdout, sdk.Stdout}, {p.stderr, sdk.Stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := sdk.NewLineWriter(src.stream, out)
			_, _ = io.Copy(w, src.r)
			_ = w.Close()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}
