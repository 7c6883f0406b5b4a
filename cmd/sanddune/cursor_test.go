package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// fakeCursor stands in for cursor-agent, which cannot be had here (Cursor
// ships it by its own installer and it needs Cursor's service). It takes
// print mode only as the plugin must call it, reads the prompt from stdin,
// commits, and prints $FIXTURE: a stream in Cursor's documented
// stream-json format. A $FIXTURE named *.stderr makes it fail as
// documented: an init event, the file on stderr, exit 1, no result event.
const fakeCursor = `#!/bin/sh
case "$*" in
"--print --output-format stream-json --trust"*) ;;
*) echo "error: unexpected arguments: $*" >&2; exit 2 ;;
esac
[ -n "$(cat)" ] || { echo "error: no prompt on stdin" >&2; exit 2; }
case "$FIXTURE" in
*.stderr)
	echo '{"type":"system","subtype":"init","session_id":"s0","model":"auto"}'
	cat "$FIXTURE" >&2
	exit 1 ;;
esac
echo change >> change.txt
git add -A && git -c user.name=cursor -c user.email=cursor@example.com commit -qm "fake cursor"
cat "$FIXTURE"
`

// TestCursorRunAgainstDocumentedFormat runs the cursor plugin against a
// fake cursor-agent printing Cursor's documented stream-json format: the
// run commits, sees the completion signal and the session id; a failure
// (nonzero exit, error on stderr) fails the run with the CLI's message (an
// error result with exit 0: TestAgentStreamErrorsFailTheRun).
func TestCursorRunAgainstDocumentedFormat(t *testing.T) {
	t.Parallel()
	const hcl = `sandbox "local" "dev" {}
agent "cursor" "default" {
  model = "auto"
}
run "fix" {
  prompt           = "fix it"
  branch_strategy  = { type = "branch", branch = "agent/fix" }
  allow_unconfined = true # the fake cursor-agent runs on the host
}
`
	start := func(t *testing.T, fixture string) (agentRun, result, string) {
		dir := gitRepo(t)
		env := append(agentEnv(t, dir, "cursor-agent", fakeCursor, fixture), "CURSOR_API_KEY=key-fake")
		writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), hcl)
		res, r := runJSON(t, dir, env, "run", "--json")
		return res, r, dir
	}
	t.Run("commit", func(t *testing.T) {
		t.Parallel()
		res, r, dir := start(t, "../../plugins/cursor/testdata/cursor-stream.jsonl")
		if r.code != 0 || res.Error != nil {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if res.CompletionSignal == nil || len(res.Commits) != 1 || len(res.Iterations) != 1 {
			t.Fatalf("result %s", r.stdout)
		}
		if got := gitOut(t, dir, "log", "--format=%s", "-1", "agent/fix"); got != "fake cursor" {
			t.Fatalf("agent/fix tip %q", got)
		}
		if it := res.Iterations[0]; it.SessionID == nil || *it.SessionID != "c6b62c6f-7ead-4fd6-9922-e952131177ff" || it.Usage != nil {
			t.Fatalf("want the init event's session id and no usage (the format has none): %s", r.stdout)
		}
	})
	t.Run("stderr error", func(t *testing.T) {
		t.Parallel()
		fixture := filepath.Join(t.TempDir(), "auth.stderr")
		writeFile(t, fixture, "Error: Not authenticated\n")
		res, r, _ := start(t, fixture)
		if r.code == 0 || res.Error == nil || !strings.Contains(res.Error.Message+r.stderr, "Not authenticated") {
			t.Fatalf("want a failed run naming the CLI's error: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	})
}
