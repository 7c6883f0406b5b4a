package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Fake agent CLIs: shell scripts named like the real CLIs, put on PATH,
// that read the prompt, commit, and print a real stream captured from the
// CLI (the plugins' testdata fixtures). The local sandbox runs them with
// the host's PATH.

const claudeSessionID = "3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48"

// fakeClaude behaves like Claude Code for sanddune's purposes: it writes
// its session file under $HOME/.claude/projects/<cwd encoded>/, refuses
// --resume of a session it cannot find, commits, and prints the fixture.
const fakeClaude = `#!/bin/sh
cat > /dev/null
id=` + claudeSessionID + `
dir="$HOME/.claude/projects/$(pwd | sed 's/[^A-Za-z0-9]/-/g')"
case " $* " in
*" --resume $id "*)
	[ -f "$dir/$id.jsonl" ] || { echo "No conversation found with session ID: $id" >&2; exit 1; }
	echo resumed >> resumed.txt ;;
esac
mkdir -p "$dir"
printf '{"type":"user","cwd":"%s","sessionId":"%s"}\n' "$PWD" "$id" >> "$dir/$id.jsonl"
echo change >> change.txt
git add -A && git -c user.name=claude -c user.email=claude@example.com commit -qm "fake claude"
cat "$FIXTURE"
`

// jsonError is the "error" object of a failed run in --json.
type jsonError struct {
	Kind    string
	Message string
}

type agentRun struct {
	Name             string
	Branch           string
	Commits          []struct{ SHA string }
	CompletionSignal *string `json:"completion_signal"`
	Iterations       []struct {
		SessionID       *string `json:"session_id"`
		SessionFilePath *string `json:"session_file_path"`
		Usage           *struct {
			Input         int64 `json:"input_tokens"`
			CacheCreation int64 `json:"cache_creation_input_tokens"`
			CacheRead     int64 `json:"cache_read_input_tokens"`
			Output        int64 `json:"output_tokens"`
		}
	}
	Error *jsonError
}

// agentEnv puts a fake CLI on PATH and returns the env for sanddune. The
// sandbox gets only the process env keys that .sanddune/.env names (an
// empty value there defers to the process env), so the tests list FIXTURE.
func agentEnv(t *testing.T, dir, name, script, fixture string) []string {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".sanddune/.env"), "FIXTURE=\n")
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, name), script)
	if err := os.Chmod(filepath.Join(bin, name), 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "FIXTURE=" + abs, "HOME=" + t.TempDir()}
}

func runJSON(t *testing.T, dir string, env []string, args ...string) (agentRun, result) {
	t.Helper()
	var doc struct{ Runs []agentRun }
	r := runJSONDoc(t, dir, env, &doc, func() int { return len(doc.Runs) }, args...)
	return doc.Runs[0], r
}

// runJSONDoc runs sanddune with env added and decodes its stdout, a JSON
// document with one entry (n counts them), into doc.
func runJSONDoc(t *testing.T, dir string, env []string, doc any, n func() int, args ...string) result {
	t.Helper()
	cmd := sandduneCmd(dir, args...)
	cmd.Env = append(cmd.Env, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Run()
	r := result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
	if err := json.Unmarshal([]byte(r.stdout), doc); err != nil || n() != 1 {
		t.Fatalf("exit %d, stdout is not a one-entry JSON document (%v):\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	return r
}

// TestClaudeRunCapturesSessionAndNextRunResumesIt runs the claude plugin
// against a fake `claude`: the JSON result carries the stream's session id,
// usage and completion signal; the session file lands where `claude
// --resume` looks on the host, with its cwd rewritten to the host repo; a
// second run with resume_session finds it inside its sandbox.
func TestClaudeRunCapturesSessionAndNextRunResumesIt(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	env := agentEnv(t, dir, "claude", fakeClaude, "../../plugins/claude/testdata/claude-stream.jsonl")
	env = append(env, "ANTHROPIC_API_KEY=sk-fake")
	home := strings.TrimPrefix(env[2], "HOME=")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `variable "resume" { default = "" }
sandbox "local" "dev" {}
agent "claude" "sonnet" {
  model = "claude-sonnet-4-5"
}
run "fix" {
  prompt          = "fix it"
  branch_strategy = { type = "branch", branch = "agent/fix" }
  resume_session  = var.resume
  # The fake claude runs on the host.
  allow_unconfined = true
}
`)
	res, r := runJSON(t, dir, env, "run", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if res.CompletionSignal == nil || *res.CompletionSignal != "<promise>COMPLETE</promise>" || len(res.Commits) != 1 || len(res.Iterations) != 1 {
		t.Fatalf("result %+v", res)
	}
	it := res.Iterations[0]
	if it.SessionID == nil || *it.SessionID != claudeSessionID {
		t.Fatalf("session_id %v, want %s", it.SessionID, claudeSessionID)
	}
	if it.Usage == nil || it.Usage.Input != 13 || it.Usage.CacheCreation != 6750 || it.Usage.CacheRead != 51290 || it.Usage.Output != 271 {
		t.Fatalf("usage %+v, want the result event's 13/6750/51290/271", it.Usage)
	}
	root, _ := filepath.EvalSymlinks(dir)
	want := filepath.Join(home, ".claude/projects", regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(root, "-"), claudeSessionID+".jsonl")
	if it.SessionFilePath == nil || *it.SessionFilePath != want {
		t.Fatalf("session_file_path %v, want %s", it.SessionFilePath, want)
	}
	data, err := os.ReadFile(want)
	if err != nil || !strings.Contains(string(data), `"cwd":"`+root+`"`) {
		t.Fatalf("captured session %q (%v) should have its cwd rewritten to %s", data, err, root)
	}

	res, r = runJSON(t, dir, env, "run", "--json", "--var", "resume="+claudeSessionID)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s", r.code, r.stderr)
	}
	if got := gitOut(t, dir, "show", "agent/fix:resumed.txt"); got != "resumed" {
		t.Fatalf("the resumed run did not see its session: resumed.txt = %q", got)
	}
}

// TestPiRunReportsSessionAndUsage runs the pi plugin against a fake `pi`.
func TestPiRunReportsSessionAndUsage(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	script := "#!/bin/sh\ncat > /dev/null\necho x > pi.txt && git add pi.txt && git -c user.name=pi -c user.email=pi@example.com commit -qm pi\ncat \"$FIXTURE\"\n"
	env := agentEnv(t, dir, "pi", script, "../../plugins/pi/testdata/pi-stream.jsonl")
	env = append(env, "ANTHROPIC_API_KEY=sk-fake")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "pi" "default" {
  model = "anthropic/claude-sonnet-4-5"
}
run "pi" {
  prompt           = "fix it"
  allow_unconfined = true # the fake pi runs on the host
}
`)
	res, r := runJSON(t, dir, env, "run", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	it := res.Iterations[0]
	if res.CompletionSignal == nil || len(res.Commits) != 1 || it.SessionID == nil || *it.SessionID != "019e8c52-3b4c-7e25-8d66-7a1f3c9b5e28" ||
		it.Usage == nil || it.Usage.Output == 0 || it.Usage.Input == 0 {
		t.Fatalf("result %s", r.stdout)
	}
}

// TestMissingCredentialsFailBeforeAnythingStarts: no ANTHROPIC_API_KEY nor
// CLAUDE_CODE_OAUTH_TOKEN: exit 2, the keys named, no branch created.
func TestMissingCredentialsFailBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	env := agentEnv(t, dir, "claude", fakeClaude, "../../plugins/claude/testdata/claude-stream.jsonl")
	env = append(env, "ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "claude" "sonnet" {
  model = "claude-sonnet-4-5"
}
run "fix" {
  prompt          = "fix it"
  branch_strategy = { type = "branch", branch = "agent/fix" }
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, env...)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "ANTHROPIC_API_KEY") || !strings.Contains(string(out), "CLAUDE_CODE_OAUTH_TOKEN") {
		t.Fatalf("exit %d, want 2 naming the keys:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if b := gitOut(t, dir, "branch", "--list", "agent/fix"); b != "" {
		t.Fatalf("branch created although the run could not start: %q", b)
	}
}
