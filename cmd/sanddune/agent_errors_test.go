package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Fake agent CLIs that commit, then fail the way the real CLIs do: the error is in the stream and, for
// claude and pi, the exit code is 0. The run must fail with exit 1, show
// the CLI's own message on the terminal and say where the commit is.
const commitThenPrint = `#!/bin/sh
cat > /dev/null
echo x >> work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -qm work
printf '%s\n' "$STREAM"
exit "${EXIT:-0}"
`

type agentCase struct {
	plugin  string
	stream  string // the CLI's stdout
	exit    string
	message string // what the terminal must show
}

var agentBlocks = map[string]string{
	"claude":   `agent "claude" "a" { model = "claude-sonnet-4-5" }`,
	"codex":    `agent "codex" "a" { model = "gpt-5.4" }`,
	"opencode": `agent "opencode" "a" { model = "anthropic/claude-sonnet-4-5" }`,
	"pi":       `agent "pi" "a" { model = "anthropic/claude-sonnet-4-5" }`,
	"copilot":  `agent "copilot" "a" { model = "gpt-5.4" }`,
	"cursor":   `agent "cursor" "a" { model = "auto" }`,
	"gemini":   `agent "gemini" "a" { model = "gemini-2.5-flash" }`,
	"command":  `agent "command" "a" { command = ["fake-agent"] }`,
}

func runFakeAgent(t *testing.T, plugin, stream, exit string) (string, result) {
	t.Helper()
	dir := gitRepo(t)
	bin := plugin
	switch plugin {
	case "command":
		bin = "fake-agent"
	case "cursor":
		bin = "cursor-agent"
	}
	env := agentEnv(t, dir, bin, commitThenPrint, "/dev/null")
	writeFile(t, filepath.Join(dir, ".sanddune/.env"), "FIXTURE=\nSTREAM=\nEXIT=\n")
	env = append(env, "ANTHROPIC_API_KEY=sk-fake", "OPENAI_API_KEY=sk-fake", "COPILOT_GITHUB_TOKEN=gh-fake", "CURSOR_API_KEY=key-fake", "GEMINI_API_KEY=sk-fake", "STREAM="+stream, "EXIT="+exit)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
`+agentBlocks[plugin]+`
run "r" {
  prompt          = "fix it"
  max_iterations  = 3
  branch_strategy = { type = "branch", branch = "agent/r" }
  # The fake agents run on the host.
  allow_unconfined = true
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return dir, result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

func TestAgentStreamErrorsFailTheRun(t *testing.T) {
	t.Parallel()
	cases := map[string]agentCase{
		"claude is_error, exit 0": {plugin: "claude", exit: "0", message: "API Error: 529 overloaded",
			stream: `{"type":"system","subtype":"init","session_id":"s1"}
{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 529 overloaded","session_id":"s1"}`},
		"codex turn.failed": {plugin: "codex", exit: "1", message: "unexpected status 401 Unauthorized",
			stream: `{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}`},
		"opencode error event": {plugin: "opencode", exit: "1", message: "Rate limit exceeded",
			stream: `{"type":"error","timestamp":1,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Rate limit exceeded","statusCode":429,"isRetryable":true}}}`},
		"pi stopReason error, exit 0": {plugin: "pi", exit: "0", message: "401 invalid x-api-key",
			stream: `{"type":"session","version":3,"id":"s1","timestamp":"2026-07-01T10:20:00.000Z","cwd":"/w"}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":""}],"stopReason":"error","errorMessage":"401 invalid x-api-key"}}
{"type":"agent_end","messages":[{"role":"assistant","content":[{"type":"text","text":""}],"stopReason":"error","errorMessage":"401 invalid x-api-key"}]}`},
		"copilot session.error, exit 0": {plugin: "copilot", exit: "0", message: "Rate limit reached for gpt-5.4",
			stream: `{"type":"model.call_failure","data":{"statusCode":429,"errorMessage":"{\"error\":{\"message\":\"Rate limit reached for gpt-5.4\"}}"}}
{"type":"session.error","data":{"errorType":"rate_limit","message":"Sorry, you have been rate-limited."}}
{"type":"result","sessionId":"s1","exitCode":0}`},
		"cursor error result, exit 0": {plugin: "cursor", exit: "0", message: "Usage limit reached",
			stream: `{"type":"system","subtype":"init","session_id":"s1","model":"auto"}
{"type":"result","subtype":"error","is_error":true,"result":"Usage limit reached <promise>COMPLETE</promise>","session_id":"s1"}`},
		"gemini error event and result, exit 0": {plugin: "gemini", exit: "0", message: "Model stream ended with an invalid chunk",
			stream: `{"type":"init","session_id":"s1","model":"gemini-2.5-flash"}
{"type":"error","severity":"error","message":"Model stream ended with an invalid chunk or missing finish reason."}
{"type":"result","status":"error","stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0}}`},
	}
	for _, plugin := range []string{"claude", "codex", "gemini", "opencode", "pi", "copilot", "cursor", "command"} {
		cases[plugin+" exits non-zero without a completion signal"] = agentCase{plugin: plugin, exit: "3", stream: "working on it", message: "exited with code 3"}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, r := runFakeAgent(t, c.plugin, c.stream, c.exit)
			if r.code != 1 || !strings.Contains(r.stderr, c.message) || !strings.Contains(r.stderr, "[agent."+c.plugin+".a]") ||
				!strings.Contains(r.stderr, "iteration 1") || !strings.Contains(r.stderr, "1 commit(s) kept on branch agent/r") {
				t.Fatalf("exit %d, want 1 with %q, the agent, iteration 1 and the branch on the terminal:\n%s", r.code, c.message, r.stderr)
			}
			if n := gitOut(t, dir, "rev-list", "--count", "HEAD..agent/r"); n != "1" {
				t.Fatalf("the failed iteration's commit is not on agent/r (%s commits): the run went on or lost it", n)
			}
		})
	}
}

// A notice the CLI recovers from is a warning, not a failure.
func TestAgentRetryNoticesAreWarnings(t *testing.T) {
	t.Parallel()
	_, r := runFakeAgent(t, "codex", `{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done <promise>COMPLETE</promise>"}}
{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}`, "0")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: agent: Reconnecting... 1/5") {
		t.Fatalf("exit %d, want 0 with the notice as a warning:\n%s", r.code, r.stderr)
	}
}

// TestSandboxPluginCrashIsBlamedOnTheSandbox: the local sandbox plugin
// dies while the agent runs (the agent kills it: its parent process).
// The error blames the sandbox plugin, not the agent; sanddune restarts
// the plugin and, through it, salvages the isolated sandbox (the agent's
// commit onto the run's branch, its uncommitted file into a patch), stops
// the agent and removes the sandbox, and says so (ADR 0016).
func TestSandboxPluginCrashIsBlamedOnTheSandbox(t *testing.T) {
	dir := gitRepo(t)
	pidFile := filepath.Join(t.TempDir(), "agent.pid")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["sh", "-c", "echo hi > f.txt && git add f.txt && git -c user.name=a -c user.email=a@example.com commit -qm work && echo more > g.txt && echo $$ > `+pidFile+` && kill -9 $PPID; exec sleep 30"]
}
run "crash" {
  prompt          = "hi"
  branch_strategy = { type = "branch", branch = "agent/crash" }
}
`)
	r := run(t, dir, "run")
	if m := regexp.MustCompile(`sandbox (\S+) is left`).FindStringSubmatch(r.stderr); m != nil {
		t.Cleanup(func() { os.RemoveAll(m[1]) })
	}
	m := regexp.MustCompile(`removed sandbox (\S+) after salvaging 1 commit\(s\) onto branch agent/crash and its uncommitted work to (\S+\.patch)`).FindStringSubmatch(r.stderr)
	if r.code != 1 || !strings.Contains(r.stderr, "[sandbox.local.dev]") || strings.Contains(r.stderr, "[agent.command.a]") ||
		!strings.Contains(r.stderr, "plugin process exited") || !strings.Contains(r.stderr, "the sandbox plugin died; sanddune restarted it and") ||
		m == nil || !strings.Contains(r.stderr, "1 commit(s) kept on branch agent/crash") {
		t.Fatalf("exit %d, want 1 blaming sandbox.local.dev, saying the plugin died and what its restart salvaged and removed:\n%s", r.code, r.stderr)
	}
	if got := gitOut(t, dir, "show", "agent/crash:f.txt"); got != "hi" {
		t.Fatalf("the agent's commit was lost: %q", got)
	}
	if patch, err := os.ReadFile(m[2]); err != nil || !strings.Contains(string(patch), "g.txt") {
		t.Fatalf("the agent's uncommitted file is not in the patch %s: %v\n%s", m[2], err, patch)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sandbox directory %s left: %v", m[1], err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || processAlive(pid) {
		t.Errorf("the agent (pid %s) outlived the run", b)
	}
}
