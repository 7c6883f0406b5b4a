package enginetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/missingstudio/sanddune/core"
)

// TestFakeResultJSON: the --json entry of a run has the documented shape.
func TestFakeResultJSON(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, &fakeAgent{Script: iterationScript(0, "")}), &term)
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/json"}
	o.MaxIterations = 2
	res := run(t, o)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"branch", "commits", "completion_signal", "egress_denied", "egress_refused", "iterations", "log_file", "name", "output", "patch_path", "preserved_worktree_path", "stdout", "steps", "token_budgets"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v\n%s", keys, want, b)
	}
	if doc["completion_signal"] != nil || doc["preserved_worktree_path"] != nil || doc["patch_path"] != nil {
		t.Errorf("completion_signal, preserved_worktree_path and patch_path must be null:\n%s", b)
	}
	if doc["name"] != "test" || doc["branch"] != "agent/json" || doc["log_file"] != res.LogFile || !strings.Contains(doc["stdout"].(string), "iteration 2 done") {
		t.Errorf("document:\n%s", b)
	}
	commits := doc["commits"].([]any)
	if len(commits) != 2 || commits[0].(map[string]any)["sha"] != res.Commits[0].SHA || len(commits[0].(map[string]any)) != 1 {
		t.Errorf("commits %v", commits)
	}
	its := doc["iterations"].([]any)
	if len(its) != 2 {
		t.Fatalf("iterations %v", its)
	}
	it := its[1].(map[string]any)
	usage, _ := it["usage"].(map[string]any)
	if it["session_id"] != "s2" || usage == nil || len(usage) != 4 || usage["input_tokens"] != 20.0 || usage["output_tokens"] != 2.0 ||
		usage["cache_creation_input_tokens"] != 0.0 || usage["cache_read_input_tokens"] != 0.0 {
		t.Errorf("iteration 2: %v", it)
	}

	// A signal, and an iteration without session or usage.
	o = options(repo, localSandbox(t), commandAgent(t, "echo '"+signal+"'"), &term)
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(run(t, o)); err != nil {
		t.Fatal(err)
	}
	b = []byte(buf.String())
	if !strings.Contains(string(b), `"completion_signal":"<promise>COMPLETE</promise>"`) ||
		!strings.Contains(string(b), `"iterations":[{"session_id":null,`) || !strings.Contains(string(b), `"usage":null}]`) ||
		!strings.Contains(string(b), `"commits":[]`) {
		t.Errorf("document:\n%s", b)
	}
}

// TestParallelRuns: runs on different branches share no state and all land
// their commits (same repo, same plugin connections).
func TestParallelRuns(t *testing.T) {
	t.Parallel()
	for _, c := range bothSandboxes {
		t.Run(c.name, func(t *testing.T) {
			sb := c.sandbox(t)
			repo := newRepo(t)
			agent := commandAgent(t, commitScript("work.txt")+" && echo '"+signal+"'")
			const n = 3
			var wg sync.WaitGroup
			results := make([]*core.Result, n)
			errs := make([]error, n)
			terms := make([]buffer, n)
			for i := range n {
				wg.Go(func() {
					o := options(repo, sb, agent, &terms[i])
					o.Name = fmt.Sprintf("run%d", i)
					o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: fmt.Sprintf("agent/p%d", i)}
					results[i], errs[i] = core.Run(t.Context(), o)
				})
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Errorf("run %d: %v", i, errs[i])
					continue
				}
				b := fmt.Sprintf("agent/p%d", i)
				if got := revList(t, repo, "main.."+b); len(got) != 1 || !slices.Equal(shas(results[i]), got) {
					t.Errorf("run %d: commits %v, %s has %v", i, shas(results[i]), b, got)
				}
				// The ref guard knows the other runs' branches.
				if out := terms[i].String(); strings.Contains(out, "while the sandbox ran") {
					t.Errorf("run %d warned about another run's branch:\n%s", i, out)
				}
			}
			assertClean(t, repo)
		})
	}
}
