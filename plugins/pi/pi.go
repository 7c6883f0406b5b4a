// Package pi is the agent provider for the pi coding agent (`pi`, npm
// @mariozechner/pi-coding-agent, checked against 0.73). Print mode is
// `pi --mode json` with the prompt on stdin. pi has no permission prompts.
package pi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// ThinkingLevels are the values of `--thinking`.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// SessionPattern is where pi keeps a session: a directory per cwd, files
// named <timestamp>_<id>.jsonl.
const SessionPattern = "{home}/.pi/agent/sessions/{cwd_encoded}/*_{session_id}.jsonl"

type provider struct{ agentkit.Base }

var _ sdk.CwdEncoder = provider{}

// New returns the pi agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:          "pi",
		Version:       "0.1.0",
		Description:   "pi coding agent (pi)",
		Model:         "Model passed as --model: an id or pattern, optionally provider/id (e.g. anthropic/claude-sonnet-4-6).",
		ModelRequired: true,
		Attributes: []sdk.Attribute{
			{Name: "thinking", Type: cty.String, Description: "Thinking level passed as --thinking: off, minimal, low, medium, high or xhigh."},
		},
		EnvExample:      "ANTHROPIC_API_KEY",
		BaseURL:         "set as the model's provider's baseUrl in the sandbox's ~/.pi/agent/models.json (merged into the file, before pi starts); needs the model as provider/id.",
		CaptureSessions: "Copy each iteration's session file to ~/.pi/agent/sessions on the host, where `pi --session` finds it.",
		// The session header carries the cwd; pi runs a resumed session there.
		SessionFields: []string{"cwd"},
		NewParser:     func(sdk.Config) sdk.Parser { return NewParser() },
	}}
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	ds := agentkit.CheckOneOf(agentkit.String(cfg, "thinking"), ThinkingLevels, "thinking")
	if model := agentkit.String(cfg, "model"); agentkit.String(cfg, "base_url") != "" && model != "" && !strings.Contains(model, "/") {
		ds = append(ds, sdk.Diagnostic{
			Summary:   "base_url needs a provider",
			Detail:    fmt.Sprintf("base_url applies to one provider of pi: set the model as provider/id (e.g. anthropic/%s).", model),
			Attribute: "base_url",
		})
	}
	return append(ds, agentkit.CheckCommon(cfg)...), nil
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

func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	return sdk.AgentDescription{
		RequiredEnv:     requiredEnv(c.Model),
		Env:             c.Env,
		Sessions:        &sdk.SessionStorage{PathPattern: SessionPattern},
		CaptureSessions: c.CaptureSessions,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           agentkit.Endpoints(c.BaseURL, c.Model),
	}, nil
}

// setBaseURL is a shell script that sets provider $1's baseUrl to $2 in
// pi's models.json (keeping what else the file holds), then execs the rest
// of its arguments. pi reads a provider's URL only from that file; node is
// there, as pi runs on it.
const setBaseURL = `node -e '
const fs = require("fs"), path = require("path");
const dir = process.env.PI_CODING_AGENT_DIR || path.join(require("os").homedir(), ".pi", "agent");
const file = path.join(dir, "models.json");
let m = {};
try { m = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { if (e.code !== "ENOENT") throw e; }
m.providers = m.providers || {};
m.providers[process.argv[1]] = { ...m.providers[process.argv[1]], baseUrl: process.argv[2] };
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(file, JSON.stringify(m, null, 2) + "\n");
' "$1" "$2" || exit
shift 2
exec "$@"`

func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := p.Common(req.Config)
	var argv []string
	switch req.Mode {
	case sdk.ModePrint:
		// --mode json implies print mode; -p would swallow a following
		// non-flag argument as a message.
		argv = []string{c.Binary, "--mode", "json"}
	case sdk.ModeInteractive:
		argv = []string{c.Binary}
	default:
		return sdk.Command{}, fmt.Errorf("pi: unknown mode %q", req.Mode)
	}
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	if thinking := agentkit.String(req.Config, "thinking"); thinking != "" {
		argv = append(argv, "--thinking", thinking)
	}
	session, err := agentkit.ResumeSession(req)
	if err != nil {
		return sdk.Command{}, fmt.Errorf("pi: %w", err)
	}
	if session != "" {
		// The id is looked up in the cwd's session directory, where the
		// host put the file; --fork copies it into a new session.
		flag := "--session"
		if req.ForkSession {
			flag = "--fork"
		}
		argv = append(argv, flag, session)
	}
	if prov, _, ok := strings.Cut(c.Model, "/"); ok && c.BaseURL != "" {
		argv = append([]string{"sh", "-c", setBaseURL, "sh", prov, c.BaseURL}, argv...)
	}
	if req.Mode == sdk.ModePrint {
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
	}
	if prompt := req.Prompt; prompt != "" {
		// pi has no "--": a leading '-' reads as a flag, '@' as a file.
		if strings.HasPrefix(prompt, "-") || strings.HasPrefix(prompt, "@") {
			prompt = " " + prompt
		}
		argv = append(argv, prompt)
	}
	return sdk.Command{Argv: argv}, nil
}
