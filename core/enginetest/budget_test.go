package enginetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
)

// TestTokenBudgetStopsBeforeNextIteration: iteration n reports 10n input
// and n output tokens (11, 33, 66 in all after 1, 2, 3); a budget of 30
// is passed by iteration 2, so the run stops before iteration 3 with a
// reason, keeping both commits on its branch.
func TestTokenBudgetStopsBeforeNextIteration(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, &fakeAgent{Script: iterationScript(0, "")}), &term)
	o.MaxIterations, o.TokenBudget = 5, 30
	res, err := core.Run(t.Context(), o)
	var re *core.RunError
	var be *core.BudgetError
	if !errors.As(err, &re) || re.Phase != core.PhaseBudget || !errors.As(err, &be) {
		t.Fatalf("err = %v; want a run stopped by its token budget", err)
	}
	if be.After != 2 || be.Used != 33 || be.Limit != 30 || be.Scope != "run" {
		t.Errorf("budget error %+v; want after iteration 2, 33 of 30 tokens", be)
	}
	if !strings.Contains(err.Error(), `run "test" stopped: token budget 30 reached after iteration 2 (33 tokens used)`) {
		t.Errorf("message:\n%v", err)
	}
	if len(res.Iterations) != 2 || len(res.Commits) != 2 || !slices.Equal(revList(t, repo, "main.."+res.Branch), shas(res)) {
		t.Errorf("%d iterations, commits %v on %q; want 2 commits kept on the run's branch", len(res.Iterations), res.Commits, res.Branch)
	}
	if !strings.Contains(err.Error(), "2 commit(s) kept on branch "+res.Branch) {
		t.Errorf("the error does not say where the commits are:\n%v", err)
	}
	if want := []core.BudgetUsage{{Scope: "run", Limit: 30, Used: 33}}; !slices.Equal(res.Budgets, want) {
		t.Errorf("result budgets %+v, want %+v", res.Budgets, want)
	}
	doc, _ := json.Marshal(core.Outcome{Name: "test", Result: res, Err: err})
	for _, want := range []string{`"token_budgets":[{"scope":"run","limit":30,"used":33}]`, `"kind":"token_budget"`, `"phase":"budget"`} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("--json lacks %s:\n%s", want, doc)
		}
	}
	log := readLog(t, res)
	for _, want := range []string{"run stopped after", "budget:     33 of 30 tokens (run)"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log's summary lacks %q:\n%s", want, log)
		}
	}
}

// TestTokenBudgetNotReachedOrLastIteration: a budget passed only by the
// last iteration, or never, does not fail the run; the result shows it.
func TestTokenBudgetNotReachedOrLastIteration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		budget int64
		used   int64
	}{{budget: 1000, used: 66}, {budget: 40, used: 66}} {
		repo := newRepo(t)
		var term buffer
		o := options(repo, localSandbox(t), fake(t, &fakeAgent{Script: iterationScript(0, "")}), &term)
		o.MaxIterations, o.TokenBudget = 3, tc.budget
		res := run(t, o)
		if len(res.Iterations) != 3 || !slices.Equal(res.Budgets, []core.BudgetUsage{{Scope: "run", Limit: tc.budget, Used: tc.used}}) {
			t.Errorf("budget %d: %d iterations, budgets %+v", tc.budget, len(res.Iterations), res.Budgets)
		}
	}
}
