// Package pi is the agent provider for the pi coding agent (`pi`, npm
// @mariozechner/pi-coding-agent, checked against 0.73). Print mode is
// `pi --mode json` with the prompt on stdin. pi has no permission prompts.
package pi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

// ThinkingLevels are the values of `--thinking`.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// SessionPattern is where pi keeps a session: a directory per cwd, files
// named <timestamp>_<id>.jsonl.
const SessionPattern = "{home}/.pi/agent/sessions/{cwd_encoded}/*_{session_id}.jsonl"

type provider struct{}

// New returns the pi agent provider.
func New() sdk.AgentProvider { return provider{} }

func (provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Name:             "pi",
		Kind:             sdk.KindAgent,
		Version:          version,
		ProtocolVersions: []int{sdk.ProtocolVersion},
		Description:      "pi coding agent (pi)",
	}, nil
}

func (provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "model", Type: cty.String, Required: true, Description: "Model passed as --model: an id or pattern, optionally provider/id (e.g. anthropic/claude-sonnet-4-6)."},
		{Name: "thinking", Type: cty.String, Description: "Thinking level passed as --thinking: off, minimal, low, medium, high or xhigh."},
		{Name: "env", Type: cty.Map(cty.String), Description: "Environment for the agent, e.g. { ANTHROPIC_API_KEY = \"...\" }."},
		{Name: "capture_sessions", Type: cty.Bool, Default: cty.True, Description: "Copy each iteration's session file to ~/.pi/agent/sessions on the host, where `pi --session` finds it."},
		{Name: "binary", Type: cty.String, Default: cty.StringVal("pi"), Description: "Name or path of the pi executable inside the sandbox."},
	}}, nil
}

type config struct {
	model, thinking, binary string
	env                     map[string]string
}

func decode(cfg sdk.Config) config {
	c := config{
		model:    agentkit.String(cfg, "model"),
		thinking: agentkit.String(cfg, "thinking"),
		binary:   agentkit.String(cfg, "binary"),
		env:      agentkit.StringMap(cfg, "env"),
	}
	if c.binary == "" {
		c.binary = "pi"
	}
	return c
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	c := decode(cfg)
	ds := agentkit.CheckOneOf(c.thinking, ThinkingLevels, "thinking")
	ds = append(ds, agentkit.CheckNotEmpty(cfg, "model")...)
	ds = append(ds, agentkit.CheckNotEmpty(cfg, "binary")...)
	ds = append(ds, agentkit.CheckEnv(c.env, "env")...)
	return ds, nil
}

// providerEnv is pi's own provider -> credential variables map (pi-ai
// env-api-keys), for the common providers.
var providerEnv = map[string][]string{
	"anthropic":         {"ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"},
	"openai":            {"OPENAI_API_KEY"},
	"google":            {"GEMINI_API_KEY"},
	"openrouter":        {"OPENROUTER_API_KEY"},
	"vercel-ai-gateway": {"AI_GATEWAY_API_KEY"},
	"groq":              {"GROQ_API_KEY"},
	"xai":               {"XAI_API_KEY"},
	"deepseek":          {"DEEPSEEK_API_KEY"},
	"mistral":           {"MISTRAL_API_KEY"},
	"cerebras":          {"CEREBRAS_API_KEY"},
	"fireworks":         {"FIREWORKS_API_KEY"},
	"zai":               {"ZAI_API_KEY"},
	"opencode":          {"OPENCODE_API_KEY"},
	"opencode-go":       {"OPENCODE_API_KEY"},
	"github-copilot":    {"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
}

// requiredEnv: a provider/id model needs that provider's keys (none when
// the provider is not in the table); a bare id is matched fuzzily by pi
// across every provider with credentials, so any known key will do.
func requiredEnv(model string) [][]string {
	if p, _, ok := strings.Cut(model, "/"); ok {
		if keys := providerEnv[p]; keys != nil {
			return [][]string{keys}
		}
		return nil
	}
	var all []string
	for _, keys := range providerEnv {
		for _, k := range keys {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	slices.Sort(all)
	return [][]string{all}
}

func (provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := decode(cfg)
	return sdk.AgentDescription{
		RequiredEnv: requiredEnv(c.model),
		Env:         c.env,
		Sessions:    &sdk.SessionStorage{PathPattern: SessionPattern, EncodeCwd: agentkit.EncodingPi},
		Resume:      true,
		Fork:        true,
	}, nil
}

func (provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := decode(req.Config)
	var argv []string
	switch req.Mode {
	case sdk.ModePrint:
		// --mode json implies print mode; -p would swallow a following
		// non-flag argument as a message.
		argv = []string{c.binary, "--mode", "json"}
	case sdk.ModeInteractive:
		argv = []string{c.binary}
	default:
		return sdk.Command{}, fmt.Errorf("pi: unknown mode %q", req.Mode)
	}
	if c.model != "" {
		argv = append(argv, "--model", c.model)
	}
	if c.thinking != "" {
		argv = append(argv, "--thinking", c.thinking)
	}
	if req.ForkSession && req.ResumeSessionID == "" {
		return sdk.Command{}, fmt.Errorf("pi: fork needs a session to resume")
	}
	if req.ResumeSessionID != "" && req.Iteration <= 1 {
		if err := agentkit.CheckSessionID(req.ResumeSessionID); err != nil {
			return sdk.Command{}, fmt.Errorf("pi: %w", err)
		}
		// The id is looked up in the cwd's session directory, where the
		// host put the file; --fork copies it into a new session.
		flag := "--session"
		if req.ForkSession {
			flag = "--fork"
		}
		argv = append(argv, flag, req.ResumeSessionID)
	}
	if req.Mode == sdk.ModePrint {
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
	}
	if p := req.Prompt; p != "" {
		// pi has no "--": a leading '-' reads as a flag, '@' as a file.
		if strings.HasPrefix(p, "-") || strings.HasPrefix(p, "@") {
			p = " " + p
		}
		argv = append(argv, p)
	}
	return sdk.Command{Argv: argv}, nil
}

func (provider) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	return sdk.ParseLines(ctx, lines, emit, NewParser())
}

func (provider) RewriteSession(_ context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	// The session header carries the cwd; pi runs a resumed session there.
	return agentkit.RewriteJSONLCwd(req.Data, req.FromCwd, req.ToCwd, "cwd"), nil
}
