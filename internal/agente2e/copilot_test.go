//go:build agentse2e

package agente2e

import "testing"

// copilot is the GitHub Copilot CLI with its own model provider (BYOK):
// base_url points it at the scripted Chat Completions server, and offline
// mode keeps it from GitHub (no sign-in, telemetry or update check).
var copilot = agentCase{cli: "copilot", keyVar: "COPILOT_PROVIDER_API_KEY", server: ChatCompletions, block: func(url string) string {
	return `agent "copilot" "e2e" {
  model    = "gpt-4.1"
  base_url = "` + url + `/v1"
  env = {
    COPILOT_OFFLINE     = "true"
    COPILOT_AUTO_UPDATE = "false"
  }
}`
}}

func TestCopilot(t *testing.T) {
	testAgent(t, copilot)
	// A resumed session: the host copies the captured event log back into
	// the sandbox; the iteration reports its own two calls' usage, not the
	// session's.
	t.Run("resume", func(t *testing.T) {
		repo := gitRepo(t)
		s := ChatCompletions(t, Commit)
		first := sandduneRun(t, repo, copilot, s.URL, "")
		checkCommitRun(t, repo, first, s)
		git(t, repo, "merge", "-q", "--ff-only", "agent/e2e")
		git(t, repo, "branch", "-q", "-D", "agent/e2e")
		id := *first.Iterations[0].SessionID
		o := sandduneRun(t, repo, copilot, s.URL, "", "--var", "iterations=1", "--var", "resume="+id)
		checkCommitRun(t, repo, o, s)
		if got := *o.Iterations[0].SessionID; got != id {
			t.Fatalf("resumed session %s, want %s", got, id)
		}
	})
}
