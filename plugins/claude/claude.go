// Package claude is the agent provider for Anthropic's Claude Code CLI
// (`claude`, checked against 2.1.x). The prompt always goes on stdin; print
// mode streams JSON (`--print --verbose --output-format stream-json`).
package claude

import (
	"context"
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

// Efforts are the values of `--effort`; "max" needs an Opus model.
var Efforts = []string{"low", "medium", "high", "xhigh", "max"}

// SessionPattern is where Claude Code keeps a session transcript.
const SessionPattern = "{home}/.claude/projects/{cwd_encoded}/{session_id}.jsonl"

type provider struct{}

// New returns the claude agent provider.
func New() sdk.AgentProvider { return provider{} }

func (provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Name:             "claude",
		Kind:             sdk.KindAgent,
		Version:          version,
		ProtocolVersions: []int{sdk.ProtocolVersion},
		Description:      "Anthropic Claude Code CLI (claude)",
	}, nil
}

func (provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "model", Type: cty.String, Description: "Model alias or full name passed as --model (e.g. opus, sonnet, claude-opus-4-8); the CLI's default when unset."},
		{Name: "effort", Type: cty.String, Description: "Reasoning effort passed as --effort: low, medium, high, xhigh or max (max needs an Opus model)."},
		{Name: "env", Type: cty.Map(cty.String), Description: "Environment for the agent, e.g. { ANTHROPIC_API_KEY = \"...\" }."},
		{Name: "capture_sessions", Type: cty.Bool, Default: cty.True, Description: "Copy each iteration's session transcript to ~/.claude/projects on the host, where `claude --resume` finds it."},
		{Name: "binary", Type: cty.String, Default: cty.StringVal("claude"), Description: "Name or path of the claude executable inside the sandbox."},
	}}, nil
}

type config struct {
	model, effort, binary string
	env                   map[string]string
}

func decode(cfg sdk.Config) config {
	c := config{
		model:  agentkit.String(cfg, "model"),
		effort: agentkit.String(cfg, "effort"),
		binary: agentkit.String(cfg, "binary"),
		env:    agentkit.StringMap(cfg, "env"),
	}
	if c.binary == "" {
		c.binary = "claude"
	}
	return c
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	c := decode(cfg)
	ds := agentkit.CheckOneOf(c.effort, Efforts, "effort")
	if c.effort == "max" && !strings.Contains(strings.ToLower(c.model), "opus") {
		model := "not set (the CLI's default model)"
		if c.model != "" {
			model = fmt.Sprintf("%q", c.model)
		}
		ds = append(ds, sdk.Diagnostic{
			Summary:   `Effort "max" needs an Opus model`,
			Detail:    "Claude Code allows effort max only with Opus models; model is " + model + `. Set model to an Opus model (e.g. "opus") or use effort "xhigh".`,
			Attribute: "effort",
		})
	}
	ds = append(ds, agentkit.CheckNotEmpty(cfg, "model")...)
	ds = append(ds, agentkit.CheckNotEmpty(cfg, "binary")...)
	ds = append(ds, agentkit.CheckEnv(c.env, "env")...)
	return ds, nil
}

func (provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := decode(cfg)
	d := sdk.AgentDescription{
		Env:      c.env,
		Sessions: &sdk.SessionStorage{PathPattern: SessionPattern, EncodeCwd: agentkit.EncodingClaude},
		Resume:   true,
		Fork:     true,
	}
	// Bedrock, Vertex and Foundry bring their own cloud credentials.
	if c.env["CLAUDE_CODE_USE_BEDROCK"] == "" && c.env["CLAUDE_CODE_USE_VERTEX"] == "" && c.env["CLAUDE_CODE_USE_FOUNDRY"] == "" {
		d.RequiredEnv = [][]string{{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"}}
	}
	return d, nil
}

func (provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := decode(req.Config)
	var argv []string
	switch req.Mode {
	case sdk.ModePrint:
		argv = []string{c.binary, "--print", "--verbose", "--output-format", "stream-json"}
	case sdk.ModeInteractive:
		argv = []string{c.binary}
	default:
		return sdk.Command{}, fmt.Errorf("claude: unknown mode %q", req.Mode)
	}
	if c.model != "" {
		argv = append(argv, "--model", c.model)
	}
	if c.effort != "" {
		argv = append(argv, "--effort", c.effort)
	}
	var env map[string]string
	if req.SkipPermissions {
		argv = append(argv, "--dangerously-skip-permissions")
		if req.RunsAsRoot {
			// Claude refuses the bypass as root outside a declared sandbox.
			env = map[string]string{"IS_SANDBOX": "1"}
		}
	}
	if req.ForkSession && req.ResumeSessionID == "" {
		return sdk.Command{}, fmt.Errorf("claude: fork needs a session to resume")
	}
	if req.ResumeSessionID != "" && req.Iteration <= 1 {
		if err := agentkit.CheckSessionID(req.ResumeSessionID); err != nil {
			return sdk.Command{}, fmt.Errorf("claude: %w", err)
		}
		argv = append(argv, "--resume", req.ResumeSessionID)
		if req.ForkSession {
			argv = append(argv, "--fork-session")
		}
	}
	cmd := sdk.Command{Argv: argv, Env: env}
	if req.Mode == sdk.ModePrint {
		cmd.Stdin = []byte(req.Prompt)
	} else if req.Prompt != "" {
		cmd.Argv = append(cmd.Argv, "--", req.Prompt)
	}
	return cmd, nil
}

func (provider) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	return sdk.ParseLines(ctx, lines, emit, NewParser())
}

func (provider) RewriteSession(_ context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	return agentkit.RewriteJSONLCwd(req.Data, req.FromCwd, req.ToCwd, "cwd"), nil
}
