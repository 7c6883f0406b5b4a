// Package opencode is the agent provider for the opencode CLI (`opencode`,
// checked against 1.18). Print mode is `opencode run --format json` with
// the prompt on stdin. opencode keeps sessions in SQLite, not in files, so
// sessions cannot be captured or resumed.
package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

type provider struct{ agentkit.Base }

// New returns the opencode agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:          "opencode",
		Version:       "0.1.0",
		Description:   "opencode CLI (opencode)",
		Model:         "Model as provider/model, passed as --model (e.g. anthropic/claude-sonnet-4-6, opencode/big-pickle).",
		ModelRequired: true,
		Attributes: []sdk.Attribute{
			{Name: "variant", Type: cty.String, Description: "Provider-specific reasoning effort, passed as --variant (e.g. high, max, minimal); print mode only."},
			{Name: "agent", Type: cty.String, Description: "opencode agent to use, passed as --agent."},
		},
		EnvExample: "ANTHROPIC_API_KEY",
		BaseURL:    "set as the model's provider's options.baseURL in OPENCODE_CONFIG_CONTENT (merged over opencode's other config).",
		NewParser:  func(sdk.Config) sdk.Parser { return NewParser() },
	}}
}

func (p provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	c := p.Common(cfg)
	ds := agentkit.CheckCommon(cfg)
	if i := strings.IndexByte(c.Model, '/'); c.Model != "" && (i <= 0 || i == len(c.Model)-1) {
		ds = append(ds, sdk.Diagnostic{
			Summary:   "Invalid model",
			Detail:    fmt.Sprintf("opencode needs the model as provider/model (e.g. anthropic/claude-sonnet-4-6), got %q.", c.Model),
			Attribute: "model",
		})
	}
	return ds, nil
}

// providerEnv lists the credential variables of the providers that need
// one (from opencode's bundled models.dev catalog). The opencode provider
// has free models without a key; others may use OAuth logins or several
// variables: they declare nothing.
var providerEnv = map[string][]string{
	"anthropic":  {"ANTHROPIC_API_KEY"},
	"openai":     {"OPENAI_API_KEY"},
	"google":     {"GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"},
	"openrouter": {"OPENROUTER_API_KEY"},
	"groq":       {"GROQ_API_KEY"},
	"xai":        {"XAI_API_KEY"},
	"deepseek":   {"DEEPSEEK_API_KEY"},
	"mistral":    {"MISTRAL_API_KEY"},
}

func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	d := sdk.AgentDescription{Env: c.Env, BypassesPermissions: true, Endpoints: agentkit.Endpoints(c.BaseURL, c.Model)}
	if prov, _, ok := strings.Cut(c.Model, "/"); ok && providerEnv[prov] != nil {
		d.RequiredEnv = [][]string{providerEnv[prov]}
	}
	return d, nil
}

// ErrNoResume is returned when asked to resume: opencode's sessions live
// in its SQLite database inside the sandbox.
var ErrNoResume = fmt.Errorf("%w: opencode keeps sessions in its SQLite database; sanddune cannot resume them", sdk.ErrNotSupported)

// noPluginInstall is a shell script that marks opencode's global config
// dir as holding its plugin package, then execs its arguments. opencode
// otherwise installs @opencode-ai/plugin and its dependencies from npm into
// that dir (in the background; a run waits for it when plugins or custom
// tools are configured) in every fresh sandbox home: a config dir whose
// node_modules exists and whose package-lock.json lists the package is
// left alone. A dir that has either file already is not touched; neither
// are a project's .opencode dirs.
const noPluginInstall = `d="${XDG_CONFIG_HOME:-$HOME/.config}/opencode"
if [ ! -e "$d/node_modules" ] && [ ! -e "$d/package-lock.json" ]; then
  mkdir -p "$d/node_modules" && printf '%s\n' '{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}' > "$d/package-lock.json"
fi
exec "$@"`

func withoutPluginInstall(argv []string) []string {
	return append([]string{"sh", "-c", noPluginInstall, "sh"}, argv...)
}

func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c, variant, agent := p.Common(req.Config), agentkit.String(req.Config, "variant"), agentkit.String(req.Config, "agent")
	if req.ResumeSessionID != "" || req.ForkSession {
		return sdk.Command{}, ErrNoResume
	}
	var env map[string]string
	if c.BaseURL != "" {
		prov, _, _ := strings.Cut(c.Model, "/")
		conf, err := json.Marshal(map[string]any{"provider": map[string]any{prov: map[string]any{"options": map[string]any{"baseURL": c.BaseURL}}}})
		if err != nil {
			return sdk.Command{}, fmt.Errorf("opencode: %w", err)
		}
		env = map[string]string{"OPENCODE_CONFIG_CONTENT": string(conf)}
	}
	switch req.Mode {
	case sdk.ModePrint:
		argv := []string{c.Binary, "run", "--format", "json", "--model", c.Model}
		if variant != "" {
			argv = append(argv, "--variant", variant)
		}
		if agent != "" {
			argv = append(argv, "--agent", agent)
		}
		if req.SkipPermissions {
			argv = append(argv, "--auto")
		}
		// No message argument: opencode quotes argv messages containing
		// spaces; stdin reaches the model verbatim.
		return sdk.Command{Argv: withoutPluginInstall(argv), Stdin: []byte(req.Prompt), Env: env}, nil
	case sdk.ModeInteractive:
		argv := []string{c.Binary, "--model", c.Model}
		if agent != "" {
			argv = append(argv, "--agent", agent)
		}
		if req.SkipPermissions {
			argv = append(argv, "--auto")
		}
		if req.Prompt != "" {
			argv = append(argv, "--prompt="+req.Prompt)
		}
		return sdk.Command{Argv: withoutPluginInstall(argv), Env: env}, nil
	}
	return sdk.Command{}, fmt.Errorf("opencode: unknown mode %q", req.Mode)
}
