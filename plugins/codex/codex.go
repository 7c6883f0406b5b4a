// Package codex is the agent provider for OpenAI's Codex CLI (`codex`,
// checked against 0.169). Print mode is `codex exec --json` (or `codex exec
// resume|fork <id> ... -`) with the prompt on stdin.
package codex

import (
	"context"
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/zclconf/go-cty/cty"
)

const version = "0.1.0"

// Efforts are the values of the model_reasoning_effort config key.
var Efforts = []string{"low", "medium", "high", "xhigh"}

// SessionPattern is where Codex keeps a session rollout: the date
// directories and the timestamp in the name cannot be derived, hence the
// globs.
const SessionPattern = "{home}/.codex/sessions/*/*/*/rollout-*-{session_id}.jsonl"

type provider struct{}

// New returns the codex agent provider.
func New() sdk.AgentProvider { return provider{} }

func (provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Name:             "codex",
		Kind:             sdk.KindAgent,
		Version:          version,
		ProtocolVersions: []int{sdk.ProtocolVersion},
		Description:      "OpenAI Codex CLI (codex)",
	}, nil
}

func (provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "model", Type: cty.String, Description: "Model passed as --model (e.g. gpt-5.4); the CLI's configured default when unset."},
		{Name: "effort", Type: cty.String, Description: "Reasoning effort, passed as -c model_reasoning_effort: low, medium, high or xhigh."},
		{Name: "env", Type: cty.Map(cty.String), Description: "Environment for the agent, e.g. { OPENAI_API_KEY = \"...\" }."},
		{Name: "capture_sessions", Type: cty.Bool, Default: cty.True, Description: "Copy each iteration's session rollout to ~/.codex/sessions on the host, where `codex resume` finds it."},
		{Name: "binary", Type: cty.String, Default: cty.StringVal("codex"), Description: "Name or path of the codex executable inside the sandbox."},
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
		c.binary = "codex"
	}
	return c
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	c := decode(cfg)
	ds := agentkit.CheckOneOf(c.effort, Efforts, "effort")
	ds = append(ds, agentkit.CheckNotEmpty(cfg, "model")...)
	ds = append(ds, agentkit.CheckNotEmpty(cfg, "binary")...)
	ds = append(ds, agentkit.CheckEnv(c.env, "env")...)
	return ds, nil
}

func (provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	return sdk.AgentDescription{
		RequiredEnv: [][]string{{"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"}},
		Env:         decode(cfg).env,
		Sessions:    &sdk.SessionStorage{PathPattern: SessionPattern},
		Resume:      true,
		Fork:        true,
	}, nil
}

func (provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := decode(req.Config)
	if req.ForkSession && req.ResumeSessionID == "" {
		return sdk.Command{}, fmt.Errorf("codex: fork needs a session to resume")
	}
	resume := req.ResumeSessionID != "" && req.Iteration <= 1
	if resume {
		if err := agentkit.CheckSessionID(req.ResumeSessionID); err != nil {
			return sdk.Command{}, fmt.Errorf("codex: %w", err)
		}
	}
	sub := "resume"
	if req.ForkSession {
		sub = "fork"
	}
	var argv []string
	switch req.Mode {
	case sdk.ModePrint:
		argv = []string{c.binary, "exec"}
		if resume {
			argv = append(argv, sub, req.ResumeSessionID)
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
		argv = []string{c.binary}
		if resume {
			argv = append(argv, sub, req.ResumeSessionID)
		}
		if req.SkipPermissions {
			argv = append(argv, "--dangerously-bypass-approvals-and-sandbox")
		}
	default:
		return sdk.Command{}, fmt.Errorf("codex: unknown mode %q", req.Mode)
	}
	if c.model != "" {
		argv = append(argv, "--model", c.model)
	}
	if c.effort != "" {
		argv = append(argv, "-c", fmt.Sprintf("model_reasoning_effort=%q", c.effort))
	}
	if req.Mode == sdk.ModePrint {
		if resume {
			argv = append(argv, "-") // resume and fork read stdin only for "-"
		}
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
	}
	if req.Prompt != "" {
		argv = append(argv, "--", req.Prompt)
	}
	return sdk.Command{Argv: argv}, nil
}

func (provider) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	return sdk.ParseLines(ctx, lines, emit, NewParser())
}

func (provider) RewriteSession(_ context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	// 0.169 writes the cwd in session_meta, turn_context, world_state and
	// thread_settings payloads, and workspace roots beside it. Message text
	// (the model's environment context) is history and stays as is.
	return agentkit.RewriteJSONLCwd(req.Data, req.FromCwd, req.ToCwd, "**.cwd", "**.runtime_workspace_roots"), nil
}
