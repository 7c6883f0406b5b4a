package run

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/missingstudio/sanddune/sdk"
)

// Budget is a token budget: a run's own (token_budget), or a pipeline's,
// shared by its runs. Every token the agent reports counts: input,
// output, cache reads and cache writes.
type Budget struct {
	// Scope names whose budget it is: ScopeRun (a run's or a session's
	// own) or `pipeline "<label>"`.
	Scope string
	Limit int64
	used  atomic.Int64
}

// ScopeRun is the Scope of a run's (or a session's) own budget.
const ScopeRun = "run"

// NewBudget returns a budget of limit tokens for scope.
func NewBudget(scope string, limit int64) *Budget {
	return &Budget{Scope: scope, Limit: limit}
}

// Spend adds an iteration's usage.
func (b *Budget) Spend(u *sdk.Usage) {
	b.used.Add(Tokens(u))
}

// Used is how many tokens were spent so far.
func (b *Budget) Used() int64 { return b.used.Load() }

// Reached says the budget is spent: no further iteration may start.
func (b *Budget) Reached() bool { return b.Used() >= b.Limit }

// BudgetUsage is a budget as a result reports it.
type BudgetUsage struct {
	Scope string `json:"scope"`
	Limit int64  `json:"limit"`
	Used  int64  `json:"used"`
}

func (u BudgetUsage) String() string {
	return fmt.Sprintf("%s of %s tokens (%s)", Thousands(u.Used), Thousands(u.Limit), u.Scope)
}

// Usage is the budget's state now.
func (b *Budget) Usage() BudgetUsage {
	return BudgetUsage{Scope: b.Scope, Limit: b.Limit, Used: b.Used()}
}

// BudgetError stops a run whose token budget is spent, before its next
// iteration (After of them ran; 0: before the run started).
type BudgetError struct {
	BudgetUsage
	After int
}

func (e *BudgetError) Error() string {
	scope := "token budget"
	if e.Scope != ScopeRun {
		scope = e.Scope + " token budget"
	}
	when := fmt.Sprintf("after iteration %d", e.After)
	if e.After == 0 {
		when = "before its first iteration"
	}
	return fmt.Sprintf("%s %s reached %s (%s tokens used)", scope, Thousands(e.Limit), when, Thousands(e.Used))
}

// Thousands writes a count with comma thousands separators: 2,000,000.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
