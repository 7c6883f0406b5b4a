// Package claude is the agent provider for Anthropic's Claude Code CLI
// (`claude`, checked against 2.1.x). The prompt always goes on stdin; print
// mode streams JSON (`--print --verbose --output-format stream-json`).
package claude

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// Efforts are the values of `--effort`; "max" needs an Opus model.
var Efforts = []string{"low", "medium", "high", "xhigh", "max"}

// SessionPattern is where Claude Code keeps a session transcript.
const SessionPattern = "{home}/.claude/projects/{cwd_encoded}/{session_id}.jsonl"

type provider struct{ agentkit.Base }

var _ sdk.CwdEncoder = provider{}

// New returns the claude agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:        "claude",
		Version:     "0.1.0",
		Description: "Anthropic Claude Code CLI (claude)",
		Model:       "Model alias or full name passed as --model (e.g. opus, sonnet, claude-opus-4-8); the CLI's default when unset.",
		Attributes: []sdk.Attribute{
			{Name: "effort", Type: cty.String, Description: "Reasoning effort passed as --effort: low, medium, high, xhigh or max (max needs an Opus model)."},
		},
		EnvExample:      "ANTHROPIC_API_KEY",
		BaseURL:         "passed as ANTHROPIC_BASE_URL (an Anthropic Messages API).",
		CaptureSessions: "Copy each iteration's session transcript to ~/.claude/projects on the host, where `claude --resume` finds it.",
		SessionFields:   []string{"cwd"},
		NewParser:       func(sdk.Config) sdk.Parser { return NewParser() },
	}}
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	effort, model := agentkit.String(cfg, "effort"), agentkit.String(cfg, "model")
	ds := agentkit.CheckOneOf(effort, Efforts, "effort")
	if effort == "max" && !strings.Contains(strings.ToLower(model), "opus") {
		is := "not set (the CLI's default model)"
		if model != "" {
			is = fmt.Sprintf("%q", model)
		}
		ds = append(ds, sdk.Diagnostic{
			Summary:   `Effort "max" needs an Opus model`,
			Detail:    "Claude Code allows effort max only with Opus models; model is " + is + `. Set model to an Opus model (e.g. "opus") or use effort "xhigh".`,
			Attribute: "effort",
		})
	}
	return append(ds, agentkit.CheckCommon(cfg)...), nil
}

func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	env := c.Env
	d := sdk.AgentDescription{
		Env:             env,
		Sessions:        &sdk.SessionStorage{PathPattern: SessionPattern},
		CaptureSessions: c.CaptureSessions,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           agentkit.Endpoints(cmp.Or(c.BaseURL, env["ANTHROPIC_BASE_URL"]), "", "api.anthropic.com"),
	}
	// Bedrock, Vertex and Foundry bring their own cloud credentials.
	if env["CLAUDE_CODE_USE_BEDROCK"] == "" && env["CLAUDE_CODE_USE_VERTEX"] == "" && env["CLAUDE_CODE_USE_FOUNDRY"] == "" {
		d.RequiredEnv = [][]string{{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"}}
	}
	return d, nil
}

func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := p.Common(req.Config)
	var argv []string
	switch req.Mode {
	case sdk.ModePrint:
		argv = []string{c.Binary, "--print", "--verbose", "--output-format", "stream-json"}
	case sdk.ModeInteractive:
		argv = []string{c.Binary}
	default:
		return sdk.Command{}, fmt.Errorf("claude: unknown mode %q", req.Mode)
	}
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	if effort := agentkit.String(req.Config, "effort"); effort != "" {
		argv = append(argv, "--effort", effort)
	}
	var env map[string]string
	if c.BaseURL != "" {
		env = map[string]string{"ANTHROPIC_BASE_URL": c.BaseURL}
	}
	if req.SkipPermissions {
		argv = append(argv, "--dangerously-skip-permissions")
		if req.RunsAsRoot {
			// Claude refuses the bypass as root outside a declared sandbox.
			if env == nil {
				env = map[string]string{}
			}
			env["IS_SANDBOX"] = "1"
		}
	}
	session, err := agentkit.ResumeSession(req)
	if err != nil {
		return sdk.Command{}, fmt.Errorf("claude: %w", err)
	}
	if session != "" {
		argv = append(argv, "--resume", session)
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
