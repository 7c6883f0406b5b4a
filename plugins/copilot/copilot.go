// Package copilot is the agent provider for the GitHub Copilot CLI
// (`copilot`, npm @github/copilot, checked against 1.0.x). Print mode is
// `copilot --output-format json` with the prompt on stdin, in a small sh
// wrapper that prints the session's per-call usage records after the CLI
// exits: the CLI's JSON output carries no token usage of its own.
package copilot

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// Efforts are the values of `--reasoning-effort`.
var Efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// SessionPattern is where the Copilot CLI keeps a session's event log; the
// rest of its session directory is state it rebuilds on resume.
const SessionPattern = "{home}/.copilot/session-state/{session_id}/events.jsonl"

type provider struct{ agentkit.Base }

// New returns the copilot agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:        "copilot",
		Version:     "0.1.0",
		Description: "GitHub Copilot CLI (copilot)",
		Model:       "Model passed as --model (e.g. gpt-5.4, claude-sonnet-4.6, auto); the CLI's default when unset, required with base_url.",
		Attributes: []sdk.Attribute{
			{Name: "effort", Type: cty.String, Description: "Reasoning effort passed as --reasoning-effort: none, minimal, low, medium, high, xhigh or max."},
		},
		EnvExample:      "COPILOT_GITHUB_TOKEN",
		BaseURL:         "passed as COPILOT_PROVIDER_BASE_URL (bring your own model provider: an OpenAI-compatible API unless env sets COPILOT_PROVIDER_TYPE; its key goes in COPILOT_PROVIDER_API_KEY).",
		CaptureSessions: "Copy each iteration's session event log to ~/.copilot/session-state on the host, where `copilot --resume` finds it.",
		SessionFields:   []string{"data.context.cwd", "data.context.gitRoot"},
		NewParser:       func(sdk.Config) sdk.Parser { return NewParser() },
	}}
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	ds := agentkit.CheckOneOf(agentkit.String(cfg, "effort"), Efforts, "effort")
	if agentkit.String(cfg, "base_url") != "" && agentkit.String(cfg, "model") == "" {
		ds = append(ds, sdk.Diagnostic{
			Summary:   "base_url needs a model",
			Detail:    `The Copilot CLI needs a model for its own provider (base_url): set model to the provider's model name (e.g. "gpt-5.4").`,
			Attribute: "base_url",
		})
	}
	return append(ds, agentkit.CheckCommon(cfg)...), nil
}

func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	d := sdk.AgentDescription{
		Env:             c.Env,
		Sessions:        &sdk.SessionStorage{PathPattern: SessionPattern},
		CaptureSessions: c.CaptureSessions,
		Resume:          true,

		BypassesPermissions: true,
		// GitHub's own endpoints are not declared: only a provider's is.
		Endpoints: agentkit.Endpoints(cmp.Or(c.BaseURL, c.Env["COPILOT_PROVIDER_BASE_URL"]), ""),
	}
	// Your own provider needs no GitHub account (a local one no key either).
	if c.BaseURL == "" && c.Env["COPILOT_PROVIDER_BASE_URL"] == "" {
		d.RequiredEnv = [][]string{{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"}}
	}
	return d, nil
}

// withUsage is the print-mode wrapper: `sh -c withUsage sh <session> copilot
// args...`. It runs the CLI in session <session> (a new session with a fresh
// UUID when empty), then prints the usage records the session's event log
// gained, which the parser sums. The CLI writes them only to that log. A
// stop signal (to the process group) ends the CLI; the trap keeps the
// wrapper going to print what the cut iteration used.
const withUsage = `trap : TERM INT HUP
sid=$1
shift
if [ -z "$sid" ]; then
  sid=$(cat /proc/sys/kernel/random/uuid 2>/dev/null) && set -- "$@" "--session-id=$sid"
fi
log="${COPILOT_HOME:-$HOME/.copilot}/session-state/$sid/events.jsonl"
seen=$(cat "$log" 2>/dev/null | wc -l)
"$@"
rc=$?
tail -n "+$((seen + 1))" "$log" 2>/dev/null | grep -F '"type":"session.usage_record"'
exit $rc`

func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := p.Common(req.Config)
	if req.Mode != sdk.ModePrint && req.Mode != sdk.ModeInteractive {
		return sdk.Command{}, fmt.Errorf("copilot: unknown mode %q", req.Mode)
	}
	session, err := agentkit.ResumeSession(req)
	if err != nil {
		return sdk.Command{}, fmt.Errorf("copilot: %w", err)
	}
	if req.ForkSession {
		return sdk.Command{}, errors.New("copilot: the Copilot CLI cannot fork a session from the command line")
	}
	argv := []string{c.Binary}
	if req.Mode == sdk.ModePrint {
		argv = append(argv, "--output-format", "json")
	}
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	if effort := agentkit.String(req.Config, "effort"); effort != "" {
		argv = append(argv, "--reasoning-effort", effort)
	}
	if req.SkipPermissions {
		argv = append(argv, "--allow-all")
	}
	if session != "" {
		argv = append(argv, "--resume="+session)
	}
	var env map[string]string
	if c.BaseURL != "" {
		env = map[string]string{"COPILOT_PROVIDER_BASE_URL": c.BaseURL}
	}
	if req.Mode == sdk.ModePrint {
		// Piped stdin is the prompt of a non-interactive run.
		argv = append([]string{"sh", "-c", withUsage, "sh", session}, argv...)
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt), Env: env}, nil
	}
	if req.Prompt != "" {
		// With '=' a prompt starting with '-' is not read as a flag.
		argv = append(argv, "--interactive="+req.Prompt)
	}
	return sdk.Command{Argv: argv, Env: env}, nil
}
