// Package codex is the agent provider for OpenAI's Codex CLI (`codex`,
// checked against 0.169). Print mode is `codex exec --json` (or `codex exec
// resume|fork <id> ... -`, behind a shell prelude that prints the thread's
// usage so far) with the prompt on stdin.
package codex

import (
	"cmp"
	"context"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// Efforts are the values of the model_reasoning_effort config key.
var Efforts = []string{"low", "medium", "high", "xhigh"}

// SessionPattern is where Codex keeps a session rollout: the date
// directories and the timestamp in the name cannot be derived, hence the
// globs.
const SessionPattern = "{home}/.codex/sessions/*/*/*/rollout-*-{session_id}.jsonl"

type provider struct{ agentkit.Base }

// New returns the codex agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:        "codex",
		Version:     "0.1.0",
		Description: "OpenAI Codex CLI (codex)",
		Model:       "Model passed as --model (e.g. gpt-5.4); the CLI's configured default when unset.",
		Attributes: []sdk.Attribute{
			{Name: "effort", Type: cty.String, Description: "Reasoning effort, passed as -c model_reasoning_effort: low, medium, high or xhigh."},
		},
		EnvExample:      "OPENAI_API_KEY",
		BaseURL:         "passed as -c openai_base_url (an OpenAI Responses API, for the built-in openai provider).",
		CaptureSessions: "Copy each iteration's session rollout to ~/.codex/sessions on the host, where `codex resume` finds it.",
		// 0.169 writes the cwd in session_meta, turn_context, world_state
		// and thread_settings payloads, and workspace roots beside it.
		// Message text (the model's environment context) is history and
		// stays as is.
		SessionFields: []string{"**.cwd", "**.runtime_workspace_roots"},
		NewParser:     func(sdk.Config) sdk.Parser { return NewParser() },
	}}
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	ds := agentkit.CheckOneOf(agentkit.String(cfg, "effort"), Efforts, "effort")
	return append(ds, agentkit.CheckCommon(cfg)...), nil
}

func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	return sdk.AgentDescription{
		RequiredEnv:     [][]string{{"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"}},
		Env:             c.Env,
		Sessions:        &sdk.SessionStorage{PathPattern: SessionPattern},
		CaptureSessions: c.CaptureSessions,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           agentkit.Endpoints(cmp.Or(c.BaseURL, c.Env["OPENAI_BASE_URL"]), "", "api.openai.com"),
	}, nil
}

// resumePrelude is a shell script that prints the last token_count line of
// the session's rollout, then execs its arguments. On a resumed or forked
// thread turn.completed reports the thread's running total; the parser
// subtracts the total this line carries to report the iteration's own
// usage. The id is safe in a shell word (CheckSessionID).
func resumePrelude(session string) string {
	return `f=$(ls -t "${CODEX_HOME:-$HOME/.codex}"/sessions/*/*/*/rollout-*-` + session + `.jsonl 2>/dev/null | head -n 1)
[ -z "$f" ] || grep -F '"type":"token_count"' "$f" | tail -n 1
exec "$@"`
}

func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := p.Common(req.Config)
	session, err := agentkit.ResumeSession(req)
	if err != nil {
		return sdk.Command{}, fmt.Errorf("codex: %w", err)
	}
	resume := session != ""
	sub := "resume"
	if req.ForkSession {
		sub = "fork"
	}
	var argv []string
	switch req.Mode {
	case sdk.ModePrint:
		argv = []string{c.Binary, "exec"}
		if resume {
			argv = append(argv, sub, session)
		}
		argv = append(argv, "--json", "--skip-git-repo-check")
		if req.SkipPermissions {
			argv = append(argv, "--dangerously-bypass-approvals-and-sandbox")
		} else {
			// exec cannot ask; Codex's own sandbox confines the writes. Only
			// -c works on exec and exec resume/fork alike (no -a or -s there).
			argv = append(argv, "-c", `approval_policy="never"`, "-c", `sandbox_mode="workspace-write"`)
		}
	case sdk.ModeInteractive:
		argv = []string{c.Binary}
		if resume {
			argv = append(argv, sub, session)
		}
		if req.SkipPermissions {
			argv = append(argv, "--dangerously-bypass-approvals-and-sandbox")
		}
	default:
		return sdk.Command{}, fmt.Errorf("codex: unknown mode %q", req.Mode)
	}
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	if c.BaseURL != "" {
		argv = append(argv, "-c", fmt.Sprintf("openai_base_url=%q", c.BaseURL))
	}
	if effort := agentkit.String(req.Config, "effort"); effort != "" {
		argv = append(argv, "-c", fmt.Sprintf("model_reasoning_effort=%q", effort))
	}
	if req.Mode == sdk.ModePrint {
		if resume {
			argv = append(argv, "-") // resume and fork read stdin only for "-"
			argv = append([]string{"sh", "-c", resumePrelude(session), "sh"}, argv...)
		}
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
	}
	if req.Prompt != "" {
		argv = append(argv, "--", req.Prompt)
	}
	return sdk.Command{Argv: argv}, nil
}
