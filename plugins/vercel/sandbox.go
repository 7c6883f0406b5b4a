package vercel

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

const (
	// killGrace is how long a killed command gets between SIGTERM and
	// SIGKILL.
	killGrace = 2 * time.Second
	// cleanupTimeout bounds kills and deletes made after the caller's
	// context ended.
	cleanupTimeout = time.Minute
	sigTERM        = 15
	sigKILL        = 9
)

type sandbox struct {
	cl        *client
	projectID string
	name      string // the sandbox's name: its resource ID
	sid       string // the session commands run in
	cwd       string // the session's working directory
	info      sdk.SandboxInfo
	env       map[string]string // base env of every command
	// recovered: reattached by Recover; Close leaves the sandbox.
	recovered bool

	mu      sync.Mutex
	closed  bool
	closing chan struct{} // closed by Close: running commands are killed
	running sync.WaitGroup
}

func newSandbox(cl *client, projectID, name string, se apiSession, env map[string]string) *sandbox {
	cwd := se.Cwd
	if cwd == "" || !path.IsAbs(cwd) {
		cwd = "/vercel/sandbox"
	}
	return &sandbox{
		cl: cl, projectID: projectID, name: name, sid: se.ID, cwd: cwd, env: env,
		info:    sdk.SandboxInfo{ID: name, RepoPath: path.Join(cwd, repoDir)},
		closing: make(chan struct{}),
	}
}

// prepare waits for the session to run, writes the labels file, makes the
// repository directory and learns HOME.
func (s *sandbox) prepare(ctx context.Context, labels map[string]string) error {
	if err := s.waitRunning(ctx); err != nil {
		return err
	}
	data, err := json.Marshal(labels)
	if err != nil {
		return err
	}
	if err := s.cl.writeFiles(ctx, s.sid, file{path: path.Join(s.cwd, labelsFile), mode: 0o600, content: data}); err != nil {
		return fmt.Errorf("writing the labels file: %w", err)
	}
	return s.findHome(ctx)
}

// waitRunning polls the session until it runs (create normally answers
// once it does).
func (s *sandbox) waitRunning(ctx context.Context) error {
	for delay := 200 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		se, err := s.cl.session(ctx, s.sid)
		if err != nil {
			return err
		}
		switch se.Status {
		case "running":
			return nil
		case "pending":
		default:
			return fmt.Errorf("the sandbox session is %s, not running", se.Status)
		}
		if err := sleepCtx(ctx, delay); err != nil {
			return err
		}
	}
}

// findHome makes sure the repository directory exists and sets HomePath
// to the default user's HOME.
func (s *sandbox) findHome(ctx context.Context) error {
	var out strings.Builder
	res, err := s.Exec(ctx, sdk.ExecRequest{Argv: []string{"sh", "-c", `mkdir -p "$1" && printf '%s\n' "$HOME"`, "sh", s.info.RepoPath}, Cwd: s.cwd},
		func(l sdk.OutputLine) {
			if l.Stream == sdk.Stdout {
				out.Write(l.Text)
			}
		})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit code %d", res.ExitCode)
	}
	if err != nil {
		return fmt.Errorf("making %s: %w", s.info.RepoPath, err)
	}
	if home := out.String(); path.IsAbs(home) {
		s.info.HomePath = home
	}
	return nil
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

// abs makes a sandbox path absolute: relative paths are under RepoPath
// and may not leave it.
func (s *sandbox) abs(p string) (string, error) {
	abs, err := sandboxkit.SandboxPath(p, s.info.RepoPath)
	if err != nil {
		return "", fmt.Errorf("vercel sandbox: %w", err)
	}
	return abs, nil
}

// begin registers a running operation; it fails once the sandbox is closed.
func (s *sandbox) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.running.Add(1)
	return nil
}

// stdinScript runs "$@" with stdin from the file $1, which it removes
// once open: the API has no stdin.
const stdinScript = `exec <"$1" || exit 126; rm -f "$1"; shift; exec "$@"`

// noStdinScript runs "$@" with stdin at EOF.
const noStdinScript = `exec </dev/null; exec "$@"`

// Exec runs a detached command and streams its log. Stdin goes through a
// file in the sandbox's /tmp.
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	argv, err := sandboxkit.Argv(req, "sh")
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("vercel sandbox: %w", err)
	}
	if err := s.begin(); err != nil {
		return sdk.ExecResult{}, err
	}
	defer s.running.Done()

	cwd, err := s.abs(req.Cwd)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	script := noStdinScript
	wrapper := []string{"-c", script, "sh"}
	if req.Stdin != nil {
		f := "/tmp/sanddune-stdin-" + randomHex()
		if err := s.cl.writeFiles(ctx, s.sid, file{path: f, mode: 0o600, content: req.Stdin}); err != nil {
			return sdk.ExecResult{}, s.fail(ctx, "writing stdin", err)
		}
		wrapper = []string{"-c", stdinScript, "sh", f}
	}
	body := cmdBody{
		Command: "sh",
		Args:    append(wrapper, argv...),
		Cwd:     cwd,
		Env:     sandboxkit.MergeEnv(s.env, req.Env),
		Sudo:    req.Sudo,
	}
	if req.Cwd == "" {
		body.Cwd = s.info.RepoPath
	}
	if req.Timeout > 0 {
		// A backstop: the API kills the command even if this plugin dies.
		body.Timeout = (req.Timeout + 2*killGrace).Milliseconds()
	}
	cmd, err := s.cl.start(ctx, s.sid, body)
	if err != nil {
		return sdk.ExecResult{}, s.fail(ctx, "starting the command", err)
	}
	return s.follow(ctx, cmd.ID, req.Timeout, out)
}

// follow streams a started command's log to out, kills it on timeout,
// cancellation or Close, and returns how it ended.
func (s *sandbox) follow(ctx context.Context, cid string, timeout time.Duration, out sdk.OutputFunc) (sdk.ExecResult, error) {
	var timedOut <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timedOut = t.C
	}
	// The stream outlives ctx: after a kill it delivers the last output
	// and ends with the command.
	streamCtx, stopStream := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStream()
	done := make(chan error, 1)
	go func() { done <- s.stream(streamCtx, cid, out) }()

	var why error // the reason the command was killed
	var res sdk.ExecResult
	select {
	case err := <-done:
		if err != nil {
			s.kill(cid)
			return res, fmt.Errorf("vercel sandbox %s: %w; the command was killed", s.name, err)
		}
	case <-timedOut:
		res.TimedOut = true
	case <-ctx.Done():
		why = ctx.Err()
	case <-s.closing:
		why = errClosed
	}
	if res.TimedOut || why != nil {
		s.kill(cid)
		select {
		case <-done:
		case <-time.After(cleanupTimeout):
			stopStream()
			<-done
		}
		if why != nil {
			return res, why
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cmd, err := s.cl.wait(wctx, s.sid, cid)
	if err != nil {
		return res, s.fail(ctx, "waiting for the command", err)
	}
	if cmd.ExitCode == nil {
		return res, fmt.Errorf("vercel sandbox %s: the API reports no exit code for command %s", s.name, cid)
	}
	res.ExitCode = *cmd.ExitCode
	return res, nil
}

// logLine is one line of a command's NDJSON log.
type logLine struct {
	Stream string          `json:"stream"`
	Data   json.RawMessage `json:"data"`
}

// stream copies a command's log to out until the command ends. A stream
// that breaks off, or an error line, is an error.
func (s *sandbox) stream(ctx context.Context, cid string, out sdk.OutputFunc) error {
	rc, err := s.cl.logs(ctx, s.sid, cid)
	if err != nil {
		return fmt.Errorf("opening the log stream: %w", err)
	}
	defer rc.Close()
	stdout, stderr := sdk.NewLineWriter(sdk.Stdout, out), sdk.NewLineWriter(sdk.Stderr, out)
	defer stdout.Close()
	defer stderr.Close()
	r := bufio.NewReaderSize(rc, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var l logLine
			if jerr := json.Unmarshal(line, &l); jerr != nil {
				return fmt.Errorf("the log stream sent a line that is not JSON: %w", jerr)
			}
			switch l.Stream {
			case "stdout", "stderr":
				var data string
				if jerr := json.Unmarshal(l.Data, &data); jerr != nil {
					return fmt.Errorf("the log stream sent %s data that is not a string", l.Stream)
				}
				w := stdout
				if l.Stream == "stderr" {
					w = stderr
				}
				_, _ = w.Write([]byte(data))
			case "error":
				var e struct{ Code, Message string }
				_ = json.Unmarshal(l.Data, &e)
				return fmt.Errorf("the log stream reported an error: %s: %s", e.Code, e.Message)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the log stream broke off: %w", err)
		}
	}
}

// kill stops a command: SIGTERM, then SIGKILL after killGrace. A command
// that already ended is no error.
func (s *sandbox) kill(cid string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if s.cl.kill(ctx, s.sid, cid, sigTERM) != nil {
		return
	}
	wctx, wcancel := context.WithTimeout(ctx, killGrace)
	defer wcancel()
	if cmd, err := s.cl.wait(wctx, s.sid, cid); err == nil && cmd.ExitCode != nil {
		return
	}
	_ = s.cl.kill(ctx, s.sid, cid, sigKILL)
}

// fail wraps an API error of an operation; the caller's cancellation is
// returned as is.
func (s *sandbox) fail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return ctx.Err()
	}
	return fmt.Errorf("vercel sandbox %s: %s: %w", s.name, what, err)
}

// Close kills the running commands, then stops and deletes the sandbox
// (a recovered one is left). It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.recovered {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	stopErr := s.cl.stop(ctx, s.sid)
	if err := s.cl.remove(ctx, s.name, s.projectID); err != nil {
		if stopErr == nil {
			return fmt.Errorf("vercel sandbox %s: stopped, but deleting it failed: %w (it holds nothing; `sanddune gc --force` or the Vercel dashboard removes it)", s.name, err)
		}
		return fmt.Errorf("vercel sandbox %s: stopping and deleting it failed: %w (it stops by itself at its timeout; `sanddune gc --force` removes it)", s.name, err)
	}
	return nil
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
