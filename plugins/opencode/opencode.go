// Package opencode is the agent provider for the opencode CLI (`opencode`,
// checked against 1.18). Print mode is `opencode run --format json` with
// the prompt on stdin. opencode keeps sessions in SQLite, not in files, so
// sessions cannot be captured or resumed.
package opencode

import (
	"context"
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

type provider struct{}

// New returns the opencode agent provider.
func New() sdk.AgentProvider { return provider{} }

func (provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Name:             "opencode",
		Kind:             sdk.KindAgent,
		Version:          version,
		ProtocolVersions: []int{sdk.ProtocolVersion},
		Description:      "opencode CLI (opencode)",
	}, nil
}

func (provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "model", Type: cty.String, Required: true, Description: "Model as provider/model, passed as --model (e.g. anthropic/claude-sonnet-4-6, opencode/big-pickle)."},
		{Name: "variant", Type: cty.String, Description: "Provider-specific reasoning effort, passed as --variant (e.g. high, max, minimal); print mode only."},
		{Name: "agent", Type: cty.String, Description: "opencode agent to use, passed as --agent."},
		{Name: "env", Type: cty.Map(cty.String), Description: "Environment for the agent, e.g. { ANTHROPIC_API_KEY = \"...\" }."},
		{Name: "binary", Type: cty.String, Default: cty.StringVal("opencode"), Description: "Name or path of the opencode executable inside the sandbox."},
	}}, nil
}

type config struct {
	model, variant, agent, binary string
	env                           map[string]string
}

func decode(cfg sdk.Config) config {
	c := config{
		model:   agentkit.String(cfg, "model"),
		variant: agentkit.String(cfg, "variant"),
		agent:   agentkit.String(cfg, "agent"),
		binary:  agentkit.String(cfg, "binary"),
		env:     agentkit.StringMap(cfg, "env"),
	}
	if c.binary == "" {
		c.binary = "opencode"
	}
	return c
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	c := decode(cfg)
	var ds sdk.Diagnostics
	if i := strings.IndexByte(c.model, '/'); i <= 0 || i == len(c.model)-1 {
		ds = append(ds, sdk.Diagnostic{
			Summary:   "Invalid model",
			Detail:    fmt.Sprintf("opencode needs the model as provider/model (e.g. anthropic/claude-sonnet-4-6), got %q.", c.model),
			Attribute: "model",
		})
	}
	for _, a := range []string{"variant", "agent", "binary"} {
		ds = append(ds, agentkit.CheckNotEmpty(cfg, a)...)
	}
	ds = append(ds, agentkit.CheckEnv(c.env, "env")...)
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

func (provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := decode(cfg)
	d := sdk.AgentDescription{Env: c.env}
	if p, _, ok := strings.Cut(c.model, "/"); ok && providerEnv[p] != nil {
		d.RequiredEnv = [][]string{providerEnv[p]}
	}
	return d, nil
}

// ErrNoResume is returned when asked to resume: opencode's sessions live
// in its SQLite database inside the sandbox.
var ErrNoResume = fmt.Errorf("%w: opencode keeps sessions in its SQLite database; sanddune cannot resume them", sdk.ErrNotSupported)

func (provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := decode(req.Config)
	if req.ResumeSessionID != "" || req.ForkSession {
		return sdk.Command{}, ErrNoResume
	}
	switch req.Mode {
	case sdk.ModePrint:
		argv := []string{c.binary, "run", "--format", "json", "--model", c.model}
		if c.variant != "" {
			argv = append(argv, "--variant", c.variant)
		}
		if c.agent != "" {
			argv = append(argv, "--agent", c.agent)
		}
		if req.SkipPermissions {
			argv = append(argv, "--auto")
		}
		// No message argument: opencode quotes argv messages containing
		// spaces; stdin reaches the model verbatim.
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
	case sdk.ModeInteractive:
		argv := []string{c.binary, "--model", c.model}
		if c.agent != "" {
			argv = append(argv, "--agent", c.agent)
		}
		if req.SkipPermissions {
			argv = append(argv, "--auto")
		}
		if req.Prompt != "" {
			argv = append(argv, "--prompt="+req.Prompt)
		}
		return sdk.Command{Argv: argv}, nil
	}
	return sdk.Command{}, fmt.Errorf("opencode: unknown mode %q", req.Mode)
}

func (provider) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	return sdk.ParseLines(ctx, lines, emit, NewParser())
}

// RewriteSession returns data unchanged: opencode has no session files.
func (provider) RewriteSession(_ context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	return req.Data, nil
}
