// Package agentexec runs one agent iteration inside a sandbox: it builds
// the agent's command, streams its output in bounded memory to the agent's
// parser, watches for completion signals and idleness, and says what the
// iteration produced or why it failed.
package agentexec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/sdk"
)

// Stream limits: agent output is streamed in bounded memory whatever its
// size.
const (
	// lineBudget bounds the stdout bytes queued for the parser.
	lineBudget = 8 << 20
	// lineOverhead is charged per queued line, bounding the line count too.
	lineOverhead = 64
	tailBytes    = 64 << 10
	detailBytes  = 4 << 10
	// parseGrace is how long the parser may take to finish once the
	// command has ended.
	parseGrace = 30 * time.Second
)

var (
	errStopped    = errors.New("stopped by sanddune")
	errParserGone = errors.New("the agent plugin stopped parsing the output")
)

// MaxOutputBytes bounds the output an iteration keeps.
const MaxOutputBytes = 64 << 10

// Runner invokes the agent for the iterations of one run.
type Runner struct {
	Agent             sdk.AgentProvider
	Config            sdk.Config
	Sandbox           sdk.Sandbox
	Signals           []string
	IdleTimeout       time.Duration
	CompletionTimeout time.Duration
	RunsAsRoot        bool
	// Env is set for the agent's command, under the env the agent plugin
	// asks for: what the run's env adds to the sandbox's, which every
	// Exec starts with (nil when the sandbox has it all).
	Env map[string]string
	// Confined: the sandbox confines the agent, which may then bypass its
	// permission prompts.
	Confined bool
	Log      *runlog.Log
	// Observe sees every event (OnEvent and the like).
	Observe func(iteration int, e sdk.Event)
}

// Outcome is what one agent invocation produced.
type Outcome struct {
	Signal    string
	SessionID string
	Usage     *sdk.Usage
	Output    string // result text, else the text blocks (bounded)
}

type stopReason int32

const (
	notStopped stopReason = iota
	stoppedIdle
	stoppedCompletion
)

// stream is the state of one invocation, shared by the exec output
// callback, the parser's events and the watchdog.
type stream struct {
	start time.Time
	last  atomic.Int64 // time since start of the last output, ns
	seen  atomic.Bool  // a completion signal was seen
	wake  chan struct{}
	stop  atomic.Int32

	outMu  sync.Mutex
	join   joiner
	stdout *Ring
	stderr *Ring

	mu        sync.Mutex
	match     *matcher
	text      *Ring
	hasText   bool
	result    *Ring
	hasResult bool
	errs      *Ring
	sessionID string
	usage     *sdk.Usage
	truncated int
}

func (s *stream) touch() { s.last.Store(int64(time.Since(s.start))) }

// Invoke runs iteration n with the rendered prompt, resuming (or forking)
// the session resume when it is set.
func (a *Runner) Invoke(ctx context.Context, n int, prompt, resume string, fork bool) (Outcome, error) {
	cmd, err := a.Agent.BuildCommand(ctx, sdk.CommandRequest{
		Config: a.Config, Mode: sdk.ModePrint, Prompt: prompt, Iteration: n,
		ResumeSessionID: resume, ForkSession: fork,
		SkipPermissions: a.Confined, RunsAsRoot: a.RunsAsRoot,
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("building the agent command: %w", err)
	}
	if (len(cmd.Argv) > 0) == (cmd.Shell != "") {
		return Outcome{}, errors.New("the agent plugin returned a command with both or neither of argv and shell")
	}

	s := &stream{
		start:  time.Now(),
		wake:   make(chan struct{}, 1),
		join:   joiner{max: run.MaxAgentLine},
		stdout: NewRing(tailBytes),
		stderr: NewRing(tailBytes),
		match:  newMatcher(a.Signals),
		text:   NewRing(MaxOutputBytes),
		result: NewRing(MaxOutputBytes),
		errs:   NewRing(detailBytes),
	}
	execCtx, stopExec := context.WithCancelCause(ctx)
	defer stopExec(nil)
	// The parser outlives a cancelled run until the stream ends (or
	// parseGrace passes): closing it reports a cut stream's usage.
	parseCtx, stopParse := context.WithCancel(context.WithoutCancel(ctx))
	defer stopParse()

	// stdout lines flow: exec callback -> queue -> relay -> lines ->
	// ParseStream, with at most lineBudget bytes in between.
	queue := make(chan []byte, 1024)
	lines := make(chan []byte)
	budget := semaphore.NewWeighted(lineBudget)
	parsed := make(chan struct{})
	var parseErr error
	go func() {
		defer close(parsed)
		parseErr = a.Agent.ParseStream(parseCtx, a.Config, lines, func(e sdk.Event) { a.event(s, n, e) })
		if parseErr != nil {
			// The agent plugin died or failed: nothing watches the agent
			// any more, so it is stopped rather than left running.
			stopExec(errParserGone)
		}
	}()
	go relay(queue, lines, budget, parsed)

	watchDone := make(chan struct{})
	go a.watch(s, stopExec, watchDone)

	env := maps.Clone(a.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, cmd.Env)
	res, execErr := a.Sandbox.Exec(execCtx, sdk.ExecRequest{Argv: cmd.Argv, Shell: cmd.Shell, Env: env, Stdin: cmd.Stdin},
		func(l sdk.OutputLine) { s.output(execCtx, l, queue, budget) })
	close(queue)
	select {
	case <-parsed:
	case <-time.After(parseGrace):
		stopParse()
		<-parsed
	}
	close(watchDone)

	s.mu.Lock()
	defer s.mu.Unlock()
	out := Outcome{Signal: s.match.matched(), SessionID: s.sessionID, Usage: s.usage}
	if s.hasResult {
		out.Output = s.result.String()
	} else {
		out.Output = s.text.String()
	}
	if s.truncated > 0 {
		a.Log.Warn("%d agent output line(s) longer than %d MiB were truncated", s.truncated, run.MaxAgentLine>>20)
	}
	switch {
	case ctx.Err() != nil:
		return out, context.Cause(ctx)
	case parseErr != nil && errors.Is(context.Cause(execCtx), errParserGone) && execErr != nil:
		if errors.Is(parseErr, sdk.ErrPluginShutdown) {
			if err := a.sandboxPluginGone(ctx); err != nil {
				// One process served both (as the built-ins' does): the
				// sandbox plugin died with the agent plugin.
				return out, &SandboxExecError{Err: err}
			}
		}
		return out, fmt.Errorf("%s, so the agent was stopped: %w", parserFailed(parseErr), parseErr)
	case stopReason(s.stop.Load()) == stoppedIdle:
		return out, &run.IdleTimeoutError{Timeout: a.IdleTimeout}
	case execErr != nil && stopReason(s.stop.Load()) != stoppedCompletion:
		return out, &SandboxExecError{Err: execErr}
	case s.errs.Len() > 0:
		// The CLI reported a failure in its stream: the iteration failed,
		// whatever its exit code (pi exits 0) and whatever text came before.
		return out, &StreamError{ExitCode: res.ExitCode, Message: s.errs.String()}
	case stopReason(s.stop.Load()) == stoppedCompletion:
		a.Log.Warn("completion signal seen but the agent process kept running; stopped it after %s without output", a.CompletionTimeout)
		return out, nil
	case res.ExitCode != 0:
		return out, &run.AgentExitError{ExitCode: res.ExitCode, Detail: s.detail()}
	case parseErr != nil:
		return out, fmt.Errorf("%s: %w", parserFailed(parseErr), parseErr)
	}
	return out, nil
}

// sandboxPluginGone returns the sandbox plugin's shutdown error when it is
// gone too, after the agent plugin's process died: an Exec of `true`
// through it fails at once then.
func (a *Runner) sandboxPluginGone(ctx context.Context) error {
	_, err := a.Sandbox.Exec(ctx, sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {})
	if errors.Is(err, sdk.ErrPluginShutdown) {
		return err
	}
	return nil
}

// parserFailed says why ParseStream ended with err: the agent plugin's
// process died, or its parser failed.
func parserFailed(err error) string {
	if errors.Is(err, sdk.ErrPluginShutdown) {
		return "the agent plugin died mid-iteration (its process ended)"
	}
	return "the agent plugin failed to parse the output"
}

// relay moves lines from the exec callback to the parser, releasing their
// budget once the parser took them. When the parser is gone it drains.
func relay(queue <-chan []byte, lines chan<- []byte, budget *semaphore.Weighted, parsed <-chan struct{}) {
	defer close(lines)
	dead := false
	for l := range queue {
		if !dead {
			select {
			case lines <- l:
			case <-parsed:
				dead = true
			}
		}
		budget.Release(weight(l))
	}
}

func weight(l []byte) int64 { return min(int64(len(l))+lineOverhead, lineBudget) }

// output handles one piece of the agent's output.
func (s *stream) output(ctx context.Context, l sdk.OutputLine, queue chan<- []byte, budget *semaphore.Weighted) {
	s.touch()
	s.outMu.Lock()
	if l.Stream == sdk.Stderr {
		s.stderr.Write(l.Text)
		if !l.Partial {
			s.stderr.Write([]byte{'\n'})
		}
		s.outMu.Unlock()
		return
	}
	s.stdout.Write(l.Text)
	if !l.Partial {
		s.stdout.Write([]byte{'\n'})
	}
	line, truncated, ok := s.join.add(l)
	line = append(make([]byte, 0, len(line)), line...) // queued: the caller reuses l.Text
	s.outMu.Unlock()
	if !ok {
		return
	}
	if truncated {
		s.mu.Lock()
		s.truncated++
		s.mu.Unlock()
	}
	if budget.Acquire(ctx, weight(line)) != nil {
		return // the command is being stopped
	}
	queue <- line
}

// event handles one parsed agent event.
func (a *Runner) event(s *stream, n int, e sdk.Event) {
	s.touch()
	if a.Observe != nil {
		a.Observe(n, e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Type {
	case sdk.EventText:
		a.Log.Text(e.Text)
		if s.hasText {
			s.text.WriteString("\n")
		}
		s.text.WriteString(e.Text)
		s.hasText = true
		s.feed(e.Text)
	case sdk.EventResult:
		s.result = NewRing(MaxOutputBytes)
		s.result.WriteString(e.Text)
		s.hasResult = true
		s.feed(e.Text)
	case sdk.EventToolCall:
		a.Log.ToolCall(e.ToolName, e.ToolArg)
	case sdk.EventSessionID:
		s.sessionID = e.SessionID
	case sdk.EventUsage:
		if e.Usage != nil {
			u := *e.Usage
			s.usage = &u
		}
	case sdk.EventWarning:
		a.Log.Warn("agent: %s", e.Text)
	case sdk.EventError:
		a.Log.Error("agent: %s", e.Text)
		if s.errs.Len() > 0 {
			s.errs.WriteString("\n")
		}
		s.errs.WriteString(e.Text)
	}
}

// feed looks for completion signals; s.mu is held.
func (s *stream) feed(text string) {
	if s.match.feed(text) && !s.seen.Load() {
		s.seen.Store(true)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// watch stops the command after the idle timeout (before a completion
// signal) or the completion timeout (after one), both counted from the
// last output.
func (a *Runner) watch(s *stream, stopExec context.CancelCauseFunc, done <-chan struct{}) {
	t := time.NewTimer(a.IdleTimeout)
	defer t.Stop()
	for {
		limit, why := a.IdleTimeout, stoppedIdle
		if s.seen.Load() {
			limit, why = a.CompletionTimeout, stoppedCompletion
		}
		wait := time.Duration(s.last.Load()) + limit - time.Since(s.start)
		if wait <= 0 {
			s.stop.Store(int32(why))
			stopExec(errStopped)
			return
		}
		t.Reset(wait)
		select {
		case <-done:
			return
		case <-s.wake:
		case <-t.C:
		}
	}
}

// detail explains a failed agent: its error events, else its stderr, else
// its result, else the end of its stdout. s.mu is held.
func (s *stream) detail() string {
	var parts []string
	if s.errs.Len() > 0 {
		parts = append(parts, s.errs.String())
	}
	s.outMu.Lock()
	stderr, stdout := s.stderr.String(), s.stdout.String()
	s.outMu.Unlock()
	switch {
	case strings.TrimSpace(stderr) != "":
		parts = append(parts, "stderr:\n"+lastBytes(lastLines(stderr, 40), detailBytes))
	case s.hasResult:
		parts = append(parts, lastBytes(s.result.String(), detailBytes))
	case strings.TrimSpace(stdout) != "":
		parts = append(parts, "stdout:\n"+lastBytes(lastLines(stdout, 20), detailBytes))
	}
	return strings.Join(parts, "\n")
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// StreamError is a failure the agent CLI reported in its stream (see
// sdk.EventError): a failed model call, a failed turn. Message is the
// CLI's own words.
type StreamError struct {
	ExitCode int
	Message  string
}

func (e *StreamError) Error() string {
	msg := "the agent reported an error"
	if e.ExitCode != 0 {
		msg += fmt.Sprintf(" and exited with code %d", e.ExitCode)
	}
	return msg + ":\n" + indent(strings.TrimSpace(e.Message))
}

// SandboxExecError is the sandbox failing to run the agent: the sandbox
// disappeared (sdk.ErrSandboxGone), its plugin died (sdk.ErrPluginShutdown),
// or the exec itself failed. It is the sandbox's failure, not the agent's.
type SandboxExecError struct{ Err error }

func (e *SandboxExecError) Error() string {
	if errors.Is(e.Err, sdk.ErrSandboxGone) {
		return "the sandbox disappeared while the agent ran in it: " + e.Err.Error()
	}
	if errors.Is(e.Err, sdk.ErrPluginShutdown) {
		return "the sandbox plugin crashed while the agent ran: " + e.Err.Error()
	}
	return "running the agent in the sandbox: " + e.Err.Error()
}

func (e *SandboxExecError) Unwrap() error { return e.Err }

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
