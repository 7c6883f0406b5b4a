package worktree

import (
	"errors"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	bind, iso := sdk.ContractBindMount, sdk.ContractIsolated
	tests := []struct {
		name     string
		s        Strategy
		contract sdk.Contract
		host     string
		copy     bool
		want     Plan
		errAttr  string // non-empty: want a *PlanError on this attribute
	}{
		{name: "default bind-mount is head", contract: bind, host: "main",
			want: Plan{Type: StrategyHead, Contract: bind, Branch: "main", TargetBranch: "main"}},
		{name: "default isolated is merge-to-head", contract: iso, host: "main",
			want: Plan{Type: StrategyMergeToHead, Contract: iso, TargetBranch: "main"}},
		{name: "head rejected on detached HEAD", s: Strategy{Type: StrategyHead}, contract: bind,
			errAttr: "branch_strategy.type"},
		{name: "head rejected for isolated", s: Strategy{Type: StrategyHead}, contract: iso, host: "main",
			errAttr: "branch_strategy.type"},
		{name: "head rejected with copy_to_worktree", s: Strategy{Type: StrategyHead}, contract: bind, host: "main",
			copy: true, errAttr: "copy_to_worktree"},
		{name: "default head rejected with copy_to_worktree", contract: bind, host: "main", copy: true,
			errAttr: "copy_to_worktree"},
		{name: "merge-to-head bind-mount uses a worktree", s: Strategy{Type: StrategyMergeToHead}, contract: bind,
			host: "dev", copy: true,
			want: Plan{Type: StrategyMergeToHead, Contract: bind, TargetBranch: "dev", Worktree: true}},
		{name: "merge-to-head needs a host branch", s: Strategy{Type: StrategyMergeToHead}, contract: bind,
			errAttr: "branch_strategy.type"},
		{name: "merge-to-head rejects branch", s: Strategy{Type: StrategyMergeToHead, Branch: "x"}, contract: bind,
			host: "main", errAttr: "branch_strategy.branch"},
		{name: "head rejects base_branch", s: Strategy{Type: StrategyHead, BaseBranch: "x"}, contract: bind,
			host: "main", errAttr: "branch_strategy.base_branch"},
		{name: "branch bind-mount", s: Strategy{Type: StrategyBranch, Branch: "agent/x", BaseBranch: "dev"},
			contract: bind, host: "main",
			want: Plan{Type: StrategyBranch, Contract: bind, Branch: "agent/x", BaseBranch: "dev",
				TargetBranch: "agent/x", Worktree: true}},
		{name: "branch isolated", s: Strategy{Type: StrategyBranch, Branch: "agent/x"}, contract: iso, host: "main",
			want: Plan{Type: StrategyBranch, Contract: iso, Branch: "agent/x", TargetBranch: "agent/x"}},
		{name: "branch on detached host", s: Strategy{Type: StrategyBranch, Branch: "agent/x"}, contract: bind,
			want: Plan{Type: StrategyBranch, Contract: bind, Branch: "agent/x", TargetBranch: "agent/x", Worktree: true}},
		{name: "branch requires a name", s: Strategy{Type: StrategyBranch}, contract: bind, host: "main",
			errAttr: "branch_strategy.branch"},
		{name: "branch name must be valid", s: Strategy{Type: StrategyBranch, Branch: "a..b"}, contract: bind,
			host: "main", errAttr: "branch_strategy.branch"},
		{name: "branch checked out in host", s: Strategy{Type: StrategyBranch, Branch: "main"}, contract: bind,
			host: "main", errAttr: "branch_strategy.branch"},
		{name: "bad base branch", s: Strategy{Type: StrategyBranch, Branch: "x", BaseBranch: "--force"},
			contract: bind, host: "main", errAttr: "branch_strategy.base_branch"},
		{name: "unknown strategy", s: Strategy{Type: "rebase"}, contract: bind, host: "main",
			errAttr: "branch_strategy.type"},
		{name: "unknown contract", contract: "vm", host: "main", errAttr: "sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.s, tt.contract, tt.host, tt.copy)
			if tt.errAttr != "" {
				var pe *PlanError
				if !errors.As(err, &pe) {
					t.Fatalf("want *PlanError, got %v (plan %+v)", err, got)
				}
				if pe.Attribute != tt.errAttr {
					t.Fatalf("attribute = %q, want %q (%v)", pe.Attribute, tt.errAttr, err)
				}
				if d := pe.Diagnostic(); d.Severity != sdk.SeverityError || d.Summary == "" {
					t.Fatalf("bad diagnostic %+v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A mistyped strategy is reported as unknown, with the strategy it is
// closest to, before what its other keys would mean for it.
func TestResolveUnknownStrategySuggests(t *testing.T) {
	t.Parallel()
	_, err := Resolve(Strategy{Type: "brnach", Branch: "x"}, sdk.ContractBindMount, "main", false)
	var pe *PlanError
	if !errors.As(err, &pe) || pe.Attribute != "branch_strategy.type" ||
		pe.Summary != `unknown branch strategy "brnach"` || !strings.HasPrefix(pe.Detail, `did you mean "branch"?`) {
		t.Fatalf("got %#v", err)
	}
	_, err = Resolve(Strategy{Type: "rebase"}, sdk.ContractBindMount, "main", false)
	if !errors.As(err, &pe) || strings.Contains(pe.Detail, "did you mean") {
		t.Fatalf("a strategy close to none: %#v", err)
	}
}

func TestCheckBranchName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"main", "agent/fix-42", "a.b", "feature/x_y", "sanddune/run/20240101-010101-abcdef"} {
		if err := CheckBranchName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "a..b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`, "/a", "a/",
		"a//b", "a.", ".a", "a/.b", "a.lock", "a/b.lock/c", "a@{1}", "@", "HEAD", "a\x01"} {
		if err := CheckBranchName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
