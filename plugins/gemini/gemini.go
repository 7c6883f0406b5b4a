// Package gemini is the agent provider for Google's Gemini CLI (`gemini`,
// npm @google/gemini-cli, checked against 0.61). Print mode is
// `gemini --output-format stream-json -p ""` with the prompt on stdin (the
// CLI prepends stdin to -p's text).
package gemini

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// SessionPattern is where the Gemini CLI keeps a session: a directory per
// project, named after the cwd's base name (EncodeCwd), files named
// session-<minute>-<the id's first 8 characters>.jsonl.
const SessionPattern = "{home}/.gemini/tmp/{cwd_encoded}/chats/session-*-{session_id:8}.jsonl"

type provider struct{ agentkit.Base }

var _ sdk.CwdEncoder = provider{}

// New returns the gemini agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:            "gemini",
		Version:         "0.1.0",
		Description:     "Google Gemini CLI (gemini)",
		Model:           "Model passed as --model (e.g. gemini-2.5-pro, gemini-2.5-flash); the CLI's default (auto routing) when unset.",
		EnvExample:      "GEMINI_API_KEY",
		BaseURL:         "passed as GOOGLE_GEMINI_BASE_URL (a Gemini API root, without /v1beta), with the API-key auth type set in the sandbox's ~/.gemini/settings.json when that file does not exist.",
		CaptureSessions: "Copy each iteration's session file to ~/.gemini/tmp/<project>/chats on the host, where `gemini --resume` finds it.",
		NewParser:       func(sdk.Config) sdk.Parser { return NewParser() },
	}}
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	return agentkit.CheckCommon(cfg), nil
}

// ownAuth are the env settings under which the CLI authenticates without
// an API key (Vertex AI, a Google login, the machine's credentials).
var ownAuth = []string{"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GEMINI_CLI_USE_COMPUTE_ADC"}

func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	d := sdk.AgentDescription{
		Env:             c.Env,
		Sessions:        &sdk.SessionStorage{PathPattern: SessionPattern},
		CaptureSessions: c.CaptureSessions,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           agentkit.Endpoints(cmp.Or(c.BaseURL, c.Env["GOOGLE_GEMINI_BASE_URL"]), "", "generativelanguage.googleapis.com"),
	}
	own := false
	for _, k := range ownAuth {
		own = own || c.Env[k] == "true"
	}
	if !own {
		d.RequiredEnv = [][]string{{"GEMINI_API_KEY"}}
	}
	return d, nil
}

// EncodeCwd implements sdk.CwdEncoder: the CLI names a project's directory
// after the base name of its cwd, lower case, every run of other
// characters than a-z and 0-9 a '-' ("project" when nothing is left). A
// second project of the same base name gets "-1" appended, which a fresh
// sandbox home never has.
func (provider) EncodeCwd(_ context.Context, cwd string) (string, error) {
	return slug(path.Base(cwd)), nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug spells name as the CLI does. It lowers ASCII letters only: the few
// other letters JavaScript lowers to ASCII ones (İ, the Kelvin sign) come
// out differently.
func slug(name string) string {
	lower := strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, name)
	if s := strings.Trim(nonSlug.ReplaceAllString(lower, "-"), "-"); s != "" {
		return s
	}
	return "project"
}

// apiKeyAuth makes the CLI use GEMINI_API_KEY with GOOGLE_GEMINI_BASE_URL:
// from that variable alone 0.61 infers a "gateway" auth type that its own
// check rejects ("Invalid auth method selected."), unless settings name the
// auth type. The settings also keep the CLI's usage statistics
// (play.googleapis.com) from going around the gateway. A settings file of
// the user's is left as it is.
const apiKeyAuth = `f="${GEMINI_CLI_HOME:-$HOME}/.gemini/settings.json"
[ -e "$f" ] || { mkdir -p "${f%/*}" && echo '{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}' > "$f"; } || exit 1
`

// forkSession makes a fork: --session-file loads the session's file as a
// new session. The file is the one carrying the session id (the host
// copied it into the sandbox); the id is safe in a shell word
// (CheckSessionID).
func forkSession(id string) string {
	return `f=$(grep -l -F '"sessionId":"` + id + `"' "${GEMINI_CLI_HOME:-$HOME}"/.gemini/tmp/*/chats/session-*.jsonl 2>/dev/null | head -n 1)
[ -n "$f" ] || { echo "gemini: no session file of ` + id + ` under ~/.gemini/tmp to fork" >&2; exit 1; }
exec "$@" --session-file "$f"
`
}

func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := p.Common(req.Config)
	argv := []string{c.Binary}
	switch req.Mode {
	case sdk.ModePrint:
		argv = append(argv, "--output-format", "stream-json")
	case sdk.ModeInteractive:
	default:
		return sdk.Command{}, fmt.Errorf("gemini: unknown mode %q", req.Mode)
	}
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	if req.SkipPermissions {
		// The sandbox is the trust boundary: no folder-trust prompt either.
		argv = append(argv, "--yolo", "--skip-trust")
	}
	session, err := agentkit.ResumeSession(req)
	if err != nil {
		return sdk.Command{}, fmt.Errorf("gemini: %w", err)
	}
	if session != "" && !req.ForkSession {
		argv = append(argv, "--resume", session)
	}
	cmd := sdk.Command{}
	if req.Mode == sdk.ModePrint {
		// -p makes the run headless; its text follows stdin's.
		argv = append(argv, "--prompt", "")
		cmd.Stdin = []byte(req.Prompt)
	} else if req.Prompt != "" {
		argv = append(argv, "--prompt-interactive="+req.Prompt) // a value, even when it starts with "-"
	}
	prelude := ""
	if c.BaseURL != "" {
		cmd.Env = map[string]string{"GOOGLE_GEMINI_BASE_URL": c.BaseURL}
		prelude = apiKeyAuth
	}
	switch {
	case session != "" && req.ForkSession:
		prelude += forkSession(session)
	case prelude != "":
		prelude += `exec "$@"` + "\n"
	}
	if prelude != "" {
		argv = append([]string{"sh", "-c", prelude, "sh"}, argv...)
	}
	cmd.Argv = argv
	return cmd, nil
}
