package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// fakeClaudeSpender is a fake Claude Code whose every turn commits a file
// and reports 60 input, 20 cache-read and 20 output tokens: 100 a turn,
// without a completion signal.
const fakeClaudeSpender = `#!/bin/sh
cat > /dev/null
n=$(git rev-list --count HEAD)
echo "$n" > "turn-$n.txt"
git add -A && git -c user.name=claude -c user.email=claude@example.com commit -qm "turn $n"
echo '{"type":"system","subtype":"init","session_id":"s-'$n'"}'
echo '{"type":"result","subtype":"success","is_error":false,"session_id":"s-'$n'","result":"working on it","usage":{"input_tokens":60,"cache_read_input_tokens":20,"output_tokens":20}}'
`

// TestPipelineTokenBudgetIsShared: two runs of a pipeline, one at a time,
// share its budget of 150 tokens. The first passes it after its second
// iteration (200) and stops there, keeping its two commits on its branch;
// the second stops before its first iteration, before anything is set up
// for it. --json shows the kind, the usage against the budget, and the
// kept commits.
func TestPipelineTokenBudgetIsShared(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	env := agentEnv(t, dir, "claude", fakeClaudeSpender, "/dev/null")
	env = append(env, "ANTHROPIC_API_KEY=sk-fake")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "claude" "sonnet" {}
run "a" {
  prompt           = "work"
  allow_unconfined = true
  max_iterations  = 3
  branch_strategy = { type = "branch", branch = "agent/a" }
}
run "b" {
  prompt           = "work"
  allow_unconfined = true
  max_iterations  = 3
  branch_strategy = { type = "branch", branch = "agent/b" }
}
pipeline "both" {
  runs         = [run.a, run.b]
  max_parallel = 1
  token_budget = 150
}
`)
	type budget struct {
		Scope string
		Limit int64
		Used  int64
	}
	var doc struct {
		Runs []struct {
			Name         string
			Branch       string
			Commits      []struct{ SHA string }
			Iterations   []struct{}
			TokenBudgets []budget `json:"token_budgets"`
			Error        *struct{ Kind, Message, Phase string }
		}
	}
	r := runJSONDoc(t, dir, env, &doc, func() int { return len(doc.Runs) - 1 }, "run", "--json", "both")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (stopped runs):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	byIters := map[int]int{}
	for i, run := range doc.Runs {
		byIters[len(run.Iterations)] = i
		if run.Error == nil || run.Error.Kind != "token_budget" || run.Error.Phase != "budget" ||
			len(run.Iterations) > 0 && (len(run.TokenBudgets) != 1 || run.TokenBudgets[0] != budget{`pipeline "both"`, 150, 200}) {
			t.Errorf("run %s: error %+v, budgets %+v; want stopped by the pipeline's budget", run.Name, run.Error, run.TokenBudgets)
		}
	}
	first, ok1 := byIters[2]
	second, ok2 := byIters[0]
	if !ok1 || !ok2 {
		t.Fatalf("iterations per run: %+v; want one run with 2 and one with 0:\n%s", doc.Runs, r.stdout)
	}
	f, s := doc.Runs[first], doc.Runs[second]
	if !strings.Contains(f.Error.Message, `pipeline "both" token budget 150 reached after iteration 2 (200 tokens used)`) ||
		len(f.Commits) != 2 || !strings.HasPrefix(f.Branch, "agent/") || gitOut(t, dir, "rev-list", "--count", "main.."+f.Branch) != "2" {
		t.Errorf("first run: %+v; want 2 commits kept on its branch and the reason", f)
	}
	if !strings.Contains(s.Error.Message, "reached before its first iteration") || len(s.Commits) != 0 {
		t.Errorf("second run: %+v", s)
	}
}
