package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeClaudeOutput is a fake Claude Code whose answer is a <plan>: on a
// fresh session it commits its work and answers with a plan that breaks
// the schema; resumed (--resume), it answers with a corrected plan. Its
// stream is the fixture $FIXTURE (fresh) or $FIXTURE.resumed. Both streams
// carry a schema-valid <plan> in a tool result, which is not the agent's
// answer and must never be read.
const fakeClaudeOutput = `#!/bin/sh
cat > /dev/null
id=` + claudeSessionID + `
dir="$HOME/.claude/projects/$(pwd | sed 's/[^A-Za-z0-9]/-/g')"
stream="$FIXTURE"
case " $* " in
*" --resume $id "*)
	[ -f "$dir/$id.jsonl" ] || { echo "No conversation found with session ID: $id" >&2; exit 1; }
	stream="$FIXTURE.resumed" ;;
*)
	echo work > work.txt
	git add work.txt && git -c user.name=claude -c user.email=claude@example.com commit -qm "fake claude" ;;
esac
mkdir -p "$dir"
printf '{"type":"user","cwd":"%s","sessionId":"%s"}\n' "$PWD" "$id" >> "$dir/$id.jsonl"
cat "$stream"
`

// claudeAnswer is a stream-json iteration whose tool result holds
// toolText and whose result (the final text) is answer.
func claudeAnswer(t *testing.T, toolText, answer string) string {
	t.Helper()
	var b strings.Builder
	for _, v := range []any{
		map[string]any{"type": "system", "subtype": "init", "session_id": claudeSessionID},
		map[string]any{"type": "assistant", "session_id": claudeSessionID, "message": map[string]any{"id": "m1", "content": []any{
			map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{"command": "cat notes.txt"}}}}},
		map[string]any{"type": "user", "session_id": claudeSessionID, "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": toolText}}}},
		map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": claudeSessionID, "result": answer,
			"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}},
	} {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	return b.String()
}

type outputRun struct {
	Name    string
	Branch  string
	Commits []struct{ SHA string }
	Output  json.RawMessage
	Error   *struct {
		Kind    string
		Message string
		Phase   string
		Tag     string
		Raw     *string
		Cause   struct {
			InstancePath string `json:"instance_path"`
			Message      string
		}
		SessionID             *string `json:"session_id"`
		SessionFile           *string `json:"session_file"`
		Branch                *string
		Commits               []struct{ SHA string }
		PreservedWorktreePath *string `json:"preserved_worktree_path"`
	}
}

// TestClaudeSchemaFailureThenResumedRunFixesIt: the first run's <plan>
// breaks the schema: exit 1, and --json has error.kind structured_output
// with the tag, the raw match, the cause, the branch and commits, and the
// agent session (id and file) to resume. A second run resumes that session
// (resume_session) and its corrected plan lands in "output". The valid
// <plan> in a tool result is read neither time.
func TestClaudeSchemaFailureThenResumedRunFixesIt(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	fixture := filepath.Join(t.TempDir(), "stream.jsonl")
	tool := `<plan>{"issues": [{"id": 99, "title": "from a tool"}]}</plan>`
	writeFile(t, fixture, claudeAnswer(t, tool, `Planned. <plan>{"issues": [{"id": 1, "title": "one"}, {"id": "two"}]}</plan>`))
	writeFile(t, fixture+".resumed", claudeAnswer(t, tool, `Fixed: <plan>{"issues": [{"id": 1, "title": "one"}, {"id": 2, "title": "two"}]}</plan>`))
	env := agentEnv(t, dir, "claude", fakeClaudeOutput, fixture)
	env = append(env, "ANTHROPIC_API_KEY=sk-fake")
	writeFile(t, filepath.Join(dir, ".sanddune/plan.schema.json"), `{
  "type": "object",
  "required": ["issues"],
  "properties": {"issues": {"type": "array", "items": {
    "type": "object", "required": ["id", "title"],
    "properties": {"id": {"type": "integer"}, "title": {"type": "string"}}
  }}}
}`)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `variable "resume" { default = "" }
sandbox "local" "dev" {}
agent "claude" "sonnet" {
  model = "claude-sonnet-4-5"
}
run "plan" {
  prompt           = "Plan the work. Answer inside <plan>{\"issues\": [...]}</plan>."
  branch_strategy  = { type = "branch", branch = "agent/plan" }
  resume_session   = var.resume
  allow_unconfined = true # the fake claude runs on the host
  output {
    tag    = "plan"
    schema = file("plan.schema.json")
  }
}
`)
	var doc struct{ Runs []outputRun }
	r := runJSONDoc(t, dir, env, &doc, func() int { return len(doc.Runs) }, "run", "--json")
	res := doc.Runs[0]
	e := res.Error
	if r.code != 1 || e == nil {
		t.Fatalf("exit %d, error %v; want 1 and a structured-output error\n%s\n%s", r.code, e, r.stdout, r.stderr)
	}
	if e.Kind != "structured_output" || e.Phase != "output" || e.Tag != "plan" || e.Cause.InstancePath != "/issues/1" ||
		!strings.Contains(e.Cause.Message, "title") || e.Raw == nil || !strings.Contains(*e.Raw, `{"id": "two"}`) {
		t.Fatalf("error %+v", e)
	}
	if e.SessionID == nil || *e.SessionID != claudeSessionID || e.SessionFile == nil || !strings.HasSuffix(*e.SessionFile, claudeSessionID+".jsonl") {
		t.Fatalf("error session %v %v, want %s and its captured file", e.SessionID, e.SessionFile, claudeSessionID)
	}
	if _, err := os.Stat(*e.SessionFile); err != nil {
		t.Fatalf("session file: %v", err)
	}
	if e.Branch == nil || *e.Branch != "agent/plan" || len(e.Commits) != 1 || len(res.Commits) != 1 || e.Commits[0].SHA != gitOut(t, dir, "rev-parse", "agent/plan") {
		t.Fatalf("error branch %v commits %v; the run's commits %v", e.Branch, e.Commits, res.Commits)
	}
	if string(res.Output) != "null" {
		t.Fatalf("output %s, want null", res.Output)
	}
	for _, want := range []string{`run "plan"`, "/issues/1", `resume_session = "` + claudeSessionID + `"`, "agent/plan"} {
		if !strings.Contains(e.Message, want) || !strings.Contains(r.stderr, want) {
			t.Fatalf("message (and stderr) should name %q:\n%s\nstderr:\n%s", want, e.Message, r.stderr)
		}
	}

	doc.Runs = nil
	r = runJSONDoc(t, dir, env, &doc, func() int { return len(doc.Runs) }, "run", "--json", "--var", "resume="+claudeSessionID)
	res = doc.Runs[0]
	if r.code != 0 || res.Error != nil {
		t.Fatalf("resumed run: exit %d, error %+v\n%s", r.code, res.Error, r.stderr)
	}
	var plan struct {
		Issues []struct {
			ID    int
			Title string
		}
	}
	if err := json.Unmarshal(res.Output, &plan); err != nil || len(plan.Issues) != 2 || plan.Issues[1].ID != 2 || plan.Issues[1].Title != "two" {
		t.Fatalf("output %s (%v), want the corrected plan", res.Output, err)
	}
	if res.Branch != "agent/plan" || gitOut(t, dir, "show", "agent/plan:work.txt") != "work" {
		t.Fatalf("the first run's work should still be on agent/plan (branch %s)", res.Branch)
	}
}

// TestStructuredOutputOfRunsAndSteps: a command agent's last <plan> is the
// run's output in --json (an earlier one is not); a session step's string
// output is in its step entry; a missing tag is a structured-output error
// without a session to resume.
func TestStructuredOutputOfRunsAndSteps(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "planner" {
  command = ["sh", "-c", "cat > /dev/null; echo 'draft <plan>[0]</plan>'; echo '<plan>'; echo '[1, 2, 3]'; echo '</plan>'"]
}
agent "command" "summary" {
  command = ["sh", "-c", "cat > /dev/null; echo '<summary>  all done  </summary>'"]
}
agent "command" "mute" {
  command = ["sh", "-c", "cat > /dev/null; echo 'nothing to say'"]
}
run "plan" {
  agent  = agent.command.planner
  prompt = "answer inside <plan>"
  output {
    tag    = "plan"
    schema = { type = "array", items = { type = "integer" }, minItems = 2 }
  }
}
session "s" {
  step "sum" {
    agent  = agent.command.summary
    prompt = "sum up inside <summary>"
    output {
      tag  = "summary"
      type = "string"
    }
  }
}
run "mute" {
  agent  = agent.command.mute
  prompt = "answer inside <plan>"
  output {
    tag  = "plan"
    type = "string"
  }
}
`)
	var doc struct {
		Runs []struct {
			outputRun
			Steps []outputRun
		}
	}
	r := run(t, dir, "run", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Runs) != 3 {
		t.Fatalf("exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (run mute has no output)\n%s", r.code, r.stderr)
	}
	if got := strings.Join(strings.Fields(string(doc.Runs[0].Output)), ""); got != "[1,2,3]" || doc.Runs[0].Error != nil {
		t.Fatalf("run plan: output %s, error %+v", doc.Runs[0].Output, doc.Runs[0].Error)
	}
	s := doc.Runs[2] // runs first, then sessions
	if len(s.Steps) != 1 || string(s.Steps[0].Output) != `"all done"` || string(s.Output) != `"all done"` || s.Error != nil {
		t.Fatalf("session: output %s, steps %+v, error %+v", s.Output, s.Steps, s.Error)
	}
	e := doc.Runs[1].Error
	if e == nil || e.Kind != "structured_output" || e.Raw != nil || e.SessionID != nil || !strings.Contains(e.Cause.Message, "no <plan>") ||
		!strings.Contains(e.Message, "no session to resume") || !strings.Contains(e.Message, "asks for <plan>…</plan>") {
		t.Fatalf("run mute: error %+v", e)
	}
}

// TestOutputChecksBeforeAnythingStarts: validate reports an output problem
// once, at its attribute (file:line:col); --dry-run shows the output a
// valid run reads.
func TestOutputChecksBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/plan.md"), "Plan the work.\n")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["true"]
}
run "plan" {
  prompt_file = "plan.md"
  output {
    tag  = "plan"
    type = "string"
  }
}
`)
	r := run(t, dir, "validate")
	if r.code != 1 || strings.Count(r.stdout+r.stderr, "does not ask for the output tag") != 1 || !strings.Contains(r.stdout+r.stderr, "sanddune.hcl:6:17") {
		t.Fatalf("exit %d, want 1 with the problem once at sanddune.hcl:6:17:\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/plan.md"), "Plan the work; answer inside <plan>.\n")
	r = run(t, dir, "run", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "output:    the last <plan>…</plan> of the agent's final text, as a string") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
