package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/sdk"
)

// Stream limits: agent output is streamed in bounded memory whatever its
// size.
const (
	// MaxAgentLine caps one stdout line handed to the agent's parser; the
	// rest of a longer line is dropped.
	MaxAgentLine = 16 << 20
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

var errStopped = errors.New("stopped by sanddune")

// agentRunner invokes the agent for the iterations of one run.
type agentRunner struct {
	agent      sdk.AgentProvider
	cfg        sdk.Config
	sb         sdk.Sandbox
	signals    []string
	idle       time.Duration
	completion time.Duration
	runsAsRoot bool
	// confined: the sandbox confines the agent, which may then bypass its
	// permission prompts.
	confined bool
	log      *runlog.Log
	// observe sees every event (OnEvent and the like).
	observe func(iteration int, e sdk.Event)
}

// iterationOutcome is what one agent invocation produced.
type iterationOutcome struct {
	signal    string
	sessionID string
	usage     *sdk.Usage
	output    string // result text, else the text blocks (bounded)
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
	asm    assembler
	stdout *ring
	stderr *ring

	mu        sync.Mutex
	match     *matcher
	text      *ring
	hasText   bool
	result    *ring
	hasResult bool
	errs      *ring
	sessionID string
	usage     *sdk.Usage
	truncated int
}

func (s *stream) touch() { s.last.Store(int64(time.Since(s.start))) }

func (a *agentRunner) invoke(ctx context.Context, n int, prompt, resume string, fork bool) (iterationOutcome, error) {
	cmd, err := a.agent.BuildCommand(ctx, sdk.CommandRequest{
		Config: a.cfg, Mode: sdk.ModePrint, Prompt: prompt, Iteration: n,
		ResumeSessionID: resume, ForkSession: fork,
		SkipPermissions: a.confined, RunsAsRoot: a.runsAsRoot,
	})
	if err != nil {
		return iterationOutcome{}, fmt.Errorf("building the agent command: %w", err)
	}
	if (len(cmd.Argv) > 0) == (cmd.Shell != "") {
		return iterationOutcome{}, errors.New("the agent plugin returned a command with both or neither of argv and shell")
	}

	s := &stream{
		start:  time.Now(),
		wake:   make(chan struct{}, 1),
		asm:    assembler{max: MaxAgentLine},
		stdout: newRing(tailBytes),
		stderr: newRing(tailBytes),
		match:  newMatcher(a.signals),
		text:   newRing(MaxStdoutBytes),
		result: newRing(MaxStdoutBytes),
		errs:   newRing(detailBytes),
	}
	execCtx, stopExec := context.WithCancelCause(ctx)
	defer stopExec(nil)
	parseCtx, stopParse := context.WithCancel(ctx)
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
		parseErr = a.agent.ParseStream(parseCtx, a.cfg, lines, func(e sdk.Event) { a.event(s, n, e) })
	}()
	go relay(queue, lines, budget, parsed)

	watchDone := make(chan struct{})
	go a.watch(s, stopExec, watchDone)

	res, execErr := a.sb.Exec(execCtx, sdk.ExecRequest{Argv: cmd.Argv, Shell: cmd.Shell, Env: cmd.Env, Stdin: cmd.Stdin},
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
	out := iterationOutcome{signal: s.match.matched(), sessionID: s.sessionID, usage: s.usage}
	if s.hasResult {
		out.output = s.result.String()
	} else {
		out.output = s.text.String()
	}
	if s.truncated > 0 {
		a.log.Warn("%d agent output line(s) longer than %d MiB were truncated", s.truncated, MaxAgentLine>>20)
	}
	switch {
	case ctx.Err() != nil:
		return out, context.Cause(ctx)
	case stopReason(s.stop.Load()) == stoppedIdle:
		return out, &IdleTimeoutError{Timeout: a.idle}
	case stopReason(s.stop.Load()) == stoppedCompletion:
		a.log.Warn("completion signal seen but the agent process kept running; stopped it after %s without output", a.completion)
		return out, nil
	case execErr != nil:
		return out, fmt.Errorf("running the agent in the sandbox: %w", execErr)
	case res.ExitCode != 0:
		return out, &AgentExitError{ExitCode: res.ExitCode, Detail: s.detail()}
	case parseErr != nil:
		return out, fmt.Errorf("the agent plugin failed to parse the output: %w", parseErr)
	}
	return out, nil
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
	line, truncated := s.asm.add(l.Text, l.Partial)
	s.outMu.Unlock()
	if line == nil {
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
func (a *agentRunner) event(s *stream, n int, e sdk.Event) {
	s.touch()
	if a.observe != nil {
		a.observe(n, e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Type {
	case sdk.EventText:
		a.log.Text(e.Text)
		if s.hasText {
			s.text.WriteString("\n")
		}
		s.text.WriteString(e.Text)
		s.hasText = true
		s.feed(e.Text)
	case sdk.EventResult:
		s.result = newRing(MaxStdoutBytes)
		s.result.WriteString(e.Text)
		s.hasResult = true
		s.feed(e.Text)
	case sdk.EventToolCall:
		a.log.ToolCall(e.ToolName, e.ToolArg)
	case sdk.EventSessionID:
		s.sessionID = e.SessionID
	case sdk.EventUsage:
		if e.Usage != nil {
			u := *e.Usage
			s.usage = &u
		}
	case sdk.EventError:
		a.log.Error("agent: %s", e.Text)
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
func (a *agentRunner) watch(s *stream, stopExec context.CancelCauseFunc, done <-chan struct{}) {
	t := time.NewTimer(a.idle)
	defer t.Stop()
	for {
		limit, why := a.idle, stoppedIdle
		if s.seen.Load() {
			limit, why = a.completion, stoppedCompletion
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
