// Package cursor is the agent provider for Cursor's CLI agent
// (`cursor-agent`, also installed as `agent`; installed by Cursor's own
// script, not from npm). Print mode is `cursor-agent --print
// --output-format stream-json --trust` with the prompt on stdin. It is
// built from Cursor's documented output format: the CLI needs Cursor's
// service, so it is tested against a fake CLI (see README.md).
package cursor

import (
	"context"
	"errors"
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

type provider struct{ agentkit.Base }

// New returns the cursor agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:        "cursor",
		Binary:      Binary,
		Version:     "0.1.0",
		Description: "Cursor CLI agent (cursor-agent); its documented output carries no token usage, and its chats stay in the sandbox (no resume)",
		Model:       "Model passed as --model (e.g. auto, sonnet-4.5, gpt-5.2); the CLI's default when unset.",
		EnvExample:  "CURSOR_API_KEY",
		BaseURL:     "passed as --endpoint: the URL of Cursor's own service (its Connect RPC API, not a model API), for a proxy in front of it.",
		NewParser:   func(sdk.Config) sdk.Parser { return NewParser() },
	}}
}

// Binary is the CLI's name: Cursor installs it as cursor-agent (and agent).
const Binary = "cursor-agent"

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	return agentkit.CheckCommon(cfg), nil
}

func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	return sdk.AgentDescription{
		RequiredEnv: [][]string{{"CURSOR_API_KEY"}},
		Env:         c.Env,

		BypassesPermissions: true,
		// Cursor's own service is not declared: only an --endpoint given.
		Endpoints: agentkit.Endpoints(c.BaseURL, ""),
	}, nil
}

func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := p.Common(req.Config)
	var argv []string
	switch req.Mode {
	case sdk.ModePrint:
		// --trust: a headless run cannot answer the workspace trust prompt.
		argv = []string{c.Binary, "--print", "--output-format", "stream-json", "--trust"}
	case sdk.ModeInteractive:
		argv = []string{c.Binary}
	default:
		return sdk.Command{}, fmt.Errorf("cursor: unknown mode %q", req.Mode)
	}
	// Chats live in the sandbox's ~/.cursor, which no later sandbox sees.
	if req.ForkSession || req.ResumeSessionID != "" && req.Iteration <= 1 {
		return sdk.Command{}, errors.New("cursor: resuming a chat is not supported: cursor-agent keeps its chats in the sandbox's home")
	}
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	if c.BaseURL != "" {
		argv = append(argv, "--endpoint", c.BaseURL)
	}
	if req.SkipPermissions {
		argv = append(argv, "--force")
	}
	if req.Mode == sdk.ModePrint {
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
	}
	if req.Prompt != "" {
		argv = append(argv, "--", req.Prompt)
	}
	return sdk.Command{Argv: argv}, nil
}
