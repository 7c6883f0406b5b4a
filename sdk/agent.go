package sdk

import "context"

// AgentProvider is implemented by agent plugins (claude, codex, ...). It
// builds command lines and parses the agent's output stream; it never runs
// anything itself: the host execs the command in the sandbox.
type AgentProvider interface {
	Provider
	// Describe returns what the host needs to know about the agent under a
	// given config: required env keys and session storage.
	Describe(ctx context.Context, cfg Config) (AgentDescription, error)
	// BuildCommand builds the command for one print-mode iteration or an
	// interactive session.
	BuildCommand(ctx context.Context, req CommandRequest) (Command, error)
	// ParseStream parses one iteration's stdout: it reads complete lines
	// (without newline) from lines until the channel is closed, calls emit
	// for every event in order, and returns once all events are emitted.
	// Most providers implement it as `return sdk.ParseLines(ctx, lines,
	// emit, newParser(cfg))`.
	ParseStream(ctx context.Context, cfg Config, lines <-chan []byte, emit func(Event)) error
	// RewriteSession rewrites the cwd fields in a session file's content
	// from one repo path to another (sandbox -> host on capture, host ->
	// sandbox on resume). Agents without sessions return data unchanged.
	RewriteSession(ctx context.Context, req RewriteSessionRequest) ([]byte, error)
}

// AgentDescription is static knowledge about an agent under a config.
type AgentDescription struct {
	// RequiredEnv lists credential alternatives: the run's env must provide
	// at least one key of every group, e.g. {{"ANTHROPIC_API_KEY",
	// "CLAUDE_CODE_OAUTH_TOKEN"}}. Preflight fails naming the keys otherwise.
	RequiredEnv [][]string
	// Env is the agent-provider env layer (the block's `env`, say): the host
	// merges it into the sandbox env below the run's env. Commands do not
	// repeat it in Command.Env (which would override the run's env).
	Env map[string]string
	// Sessions is nil when the agent cannot resume sessions.
	Sessions *SessionStorage
	// CaptureSessions: the host copies the session file to the host after
	// each iteration (needs Sessions).
	CaptureSessions bool
	// Resume says whether resume_session is supported; Fork likewise.
	Resume bool
	Fork   bool
	// BypassesPermissions: the agent acts on its own judgement (a model
	// agent with a permission-bypass flag), so an unattended run needs a
	// sandbox that confines it unless the run allows otherwise.
	BypassesPermissions bool
	// Endpoints are the network endpoints the agent's CLI needs (its model
	// API, in egress entry syntax, e.g. "api.anthropic.com"): a sandbox's
	// egress policy allows them unless the block says `agent = false`.
	Endpoints []string
}

// SessionStorage tells the host where session files live, so it can copy
// them between sandbox and host. PathPattern may contain the placeholders
// {home} (the home dir on that side), {cwd} (the repo path on that side),
// {cwd_encoded} (the repo path as the agent's CwdEncoder spells it, for a
// CLI that names a directory after its cwd), {session_id} and
// {session_id:N} (its first N characters, for a CLI that names a file after
// a prefix of the id: the newest match wins). A path may be
// a glob (`*`) when the CLI adds a date or prefix of its own; the newest
// match wins.
type SessionStorage struct {
	PathPattern string
}

// CwdEncoder is implemented by an agent provider whose SessionStorage
// pattern uses {cwd_encoded}: EncodeCwd returns cwd spelled the way the
// CLI names its session directory (Claude Code, for one, turns every
// non-alphanumeric rune into '-').
type CwdEncoder interface {
	EncodeCwd(ctx context.Context, cwd string) (string, error)
}

// Mode of a command.
type Mode string

const (
	ModePrint       Mode = "print"
	ModeInteractive Mode = "interactive"
)

// CommandRequest is what BuildCommand needs.
type CommandRequest struct {
	Config    Config
	Mode      Mode
	Prompt    string
	Iteration int // 1-based
	// ResumeSessionID resumes this session (iteration 1 only).
	ResumeSessionID string
	// ForkSession forks ResumeSessionID instead of continuing it.
	ForkSession bool
	// SkipPermissions: the agent runs inside a sandbox that confines it
	// (SandboxCapabilities.Confines) and may bypass its permission prompts.
	SkipPermissions bool
	// RunsAsRoot: the command runs as uid 0 in the sandbox.
	RunsAsRoot bool
}

// Command is what the host execs. Exactly one of Argv and Shell is set.
type Command struct {
	Argv  []string
	Shell string
	Stdin []byte
	Env   map[string]string
}

// Parser turns output lines into normalised events, one line at a time; it
// is the easy way to implement ParseStream (see ParseLines). It is used by
// one goroutine at a time.
type Parser interface {
	// Parse takes one complete stdout line (without newline) and returns the
	// events it carries. A malformed line never fails the parser: lines that
	// are not JSON become text events.
	Parse(line []byte) []Event
	// Close ends the stream and returns any buffered events.
	Close() []Event
}

// EventType names a normalised agent event.
type EventType string

const (
	EventText      EventType = "text"
	EventToolCall  EventType = "tool_call"
	EventSessionID EventType = "session_id"
	EventUsage     EventType = "usage"
	EventResult    EventType = "result"
	// EventError is an error the agent reports in its stream (a failed
	// model call, a failed turn): the iteration fails with its text, even
	// when the process exits 0.
	EventError EventType = "error"
	// EventWarning is a notice the agent recovers from (a retry, a
	// reconnect): it is shown and logged, and fails nothing.
	EventWarning EventType = "warning"
)

// Event is one normalised agent event. Which fields are set depends on Type.
type Event struct {
	Type EventType
	// Text: the text of text, result, error and warning events.
	Text string
	// ToolName, ToolArg: tool_call events; ToolArg is a short readable
	// argument (the command, url, query...), possibly empty.
	ToolName string
	ToolArg  string
	// SessionID: session_id events.
	SessionID string
	// Usage: usage events.
	Usage *Usage
}

// Usage is token usage reported by the agent.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:              u.InputTokens + o.InputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + o.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + o.CacheReadInputTokens,
		OutputTokens:             u.OutputTokens + o.OutputTokens,
	}
}

// RewriteSessionRequest asks an agent to rewrite a session file.
type RewriteSessionRequest struct {
	Config  Config
	Data    []byte
	FromCwd string
	ToCwd   string
}

// ParseLines drives a Parser over a line channel: the usual body of
// AgentProvider.ParseStream. The parser is closed however the stream ends,
// cancellation included, so what Close reports (a cut stream's usage) is
// emitted.
func ParseLines(ctx context.Context, lines <-chan []byte, emit func(Event), p Parser) error {
	closeParser := func() {
		for _, e := range p.Close() {
			emit(e)
		}
	}
	for {
		select {
		case <-ctx.Done():
			closeParser()
			return ctx.Err()
		case line, ok := <-lines:
			if !ok {
				closeParser()
				return nil
			}
			for _, e := range p.Parse(line) {
				emit(e)
			}
		}
	}
}
