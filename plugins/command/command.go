// Package command is the built-in "command" agent provider: it runs any
// configured command with the prompt on stdin and treats each stdout line
// as text. It serves agent CLIs without a plugin of their own, and scripted
// agents in tests and demos:
//
//	agent "command" "script" {
//	  command   = ["sh", "-c", "echo hello"]
//	  env       = { GREETING = "hi" }
//	  endpoints = ["llm.internal:8080"] # what a sandbox's egress policy lets it reach
//	}
package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// Version is the provider's version.
const Version = "0.1.0"

// Provider is the command agent provider. Its agentkit.Base gives Info,
// a stream parser that makes every line text, and a RewriteSession that
// changes nothing (the command agent has no sessions).
type Provider struct{ agentkit.Base }

var _ sdk.AgentProvider = (*Provider)(nil)

// New returns the command agent provider.
func New() sdk.AgentProvider {
	return &Provider{agentkit.Base{
		Name:        "command",
		Version:     Version,
		Description: "runs any command with the prompt on stdin; each stdout line is text",
	}}
}

// ConfigSchema declares `command`, `env` and `endpoints`.
func (*Provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{
			Name:        "command",
			Type:        cty.List(cty.String),
			Required:    true,
			Description: "Command to run, as argv (no shell): e.g. [\"my-agent\", \"--print\"]. The prompt arrives on stdin.",
		},
		{
			Name:        "env",
			Type:        cty.Map(cty.String),
			Description: "Environment variables added to the command's environment.",
		},
		{
			Name:        "endpoints",
			Type:        cty.List(cty.String),
			Description: "Network endpoints the command needs (egress entries, e.g. \"llm.internal:8080\"): a sandbox's egress policy allows them unless it says agent = false.",
		},
	}}, nil
}

// Configure checks that command names a program and env keys are valid.
func (p *Provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	var ds sdk.Diagnostics
	if argv := commandArgv(cfg); len(argv) == 0 || argv[0] == "" {
		ds = append(ds, sdk.Diagnostic{
			Summary:   "Empty command",
			Detail:    `command must name a program, e.g. command = ["my-agent", "--print"]`,
			Attribute: "command",
		})
	}
	ds = append(ds, sdk.CheckEnv(p.Common(cfg).Env, "env")...)
	return ds, nil
}

// Describe: no credentials, no sessions; env is the agent-provider env
// layer, below the run's env.
func (p *Provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	return sdk.AgentDescription{Env: p.Common(cfg).Env, Endpoints: stringList(cfg, "endpoints")}, nil
}

// BuildCommand returns the configured argv; in print mode the prompt is its
// stdin, in interactive mode the user's terminal is.
func (*Provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	argv := commandArgv(req.Config)
	if len(argv) == 0 || argv[0] == "" {
		return sdk.Command{}, errors.New("command agent: command is empty")
	}
	switch req.Mode {
	case sdk.ModePrint:
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
	case sdk.ModeInteractive:
		return sdk.Command{Argv: argv}, nil
	}
	return sdk.Command{}, fmt.Errorf("command agent: unknown mode %q", req.Mode)
}

// commandArgv reads the command attribute.
func commandArgv(cfg sdk.Config) []string { return stringList(cfg, "command") }

// stringList reads a list (or tuple) of strings attribute; nil when unset
// or not all strings.
func stringList(cfg sdk.Config, name string) []string {
	v := cfg.Value
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return nil
	}
	v = v.GetAttr(name)
	if v.IsNull() || !v.IsKnown() || !v.CanIterateElements() {
		return nil
	}
	var argv []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || !e.IsKnown() || e.Type() != cty.String {
			return nil
		}
		argv = append(argv, e.AsString())
	}
	return argv
}
