package worktree

import (
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/core/suggest"
	"github.com/missingstudio/sanddune/sdk"
)

// StrategyType names a branch strategy (core.StrategyType is this type).
type StrategyType string

const (
	StrategyHead        StrategyType = "head"
	StrategyMergeToHead StrategyType = "merge-to-head"
	StrategyBranch      StrategyType = "branch"
)

// Strategy says where a run's commits go (core.BranchStrategy is this
// type).
type Strategy struct {
	Type       StrategyType // "" = the contract's default
	Branch     string       // branch strategy: the target branch
	BaseBranch string       // branch strategy: start point of a new Branch ("" = HEAD)
}

// Plan is a resolved strategy: what Prepare does and where commits go.
type Plan struct {
	Type     StrategyType
	Contract sdk.Contract
	// Branch is the named branch of the branch strategy and the host branch
	// of head ("" when detached); empty for merge-to-head, whose temporary
	// branch Prepare generates.
	Branch string
	// BaseBranch is the start point of a new Branch ("" = HEAD).
	BaseBranch string
	// TargetBranch is where the run's commits end up: the host branch for
	// head and merge-to-head, Branch for branch.
	TargetBranch string
	// Worktree says whether Prepare creates a host worktree (bind-mount with
	// merge-to-head or branch).
	Worktree bool
}

// PlanError is a branch-strategy configuration error, raised before
// anything starts. Attribute is the offending attribute path in the run
// block ("branch_strategy.type", "copy_to_worktree", ...).
type PlanError struct {
	Attribute string
	Summary   string
	Detail    string
}

func (e *PlanError) Error() string {
	if e.Detail == "" {
		return e.Summary
	}
	return e.Summary + ": " + e.Detail
}

// Diagnostic returns the error as a config diagnostic.
func (e *PlanError) Diagnostic() sdk.Diagnostic {
	return sdk.Diagnostic{Severity: sdk.SeverityError, Summary: e.Summary, Detail: e.Detail, Attribute: e.Attribute}
}

// Resolve turns a configured strategy into a Plan for a sandbox contract and
// the branch checked out in the host repo ("" when detached). It is pure:
// every error is a *PlanError.
func Resolve(s Strategy, contract sdk.Contract, hostBranch string, copyToWorktree bool) (Plan, error) {
	return resolve(s, contract, hostBranch, true, copyToWorktree)
}

// CheckStrategy is Resolve's checks that need no host repository, for a
// run whose repository cannot be opened: its other problems are reported
// all the same.
func CheckStrategy(s Strategy, contract sdk.Contract, copyToWorktree bool) error {
	_, err := resolve(s, contract, "", false, copyToWorktree)
	return err
}

func resolve(s Strategy, contract sdk.Contract, hostBranch string, hostKnown, copyToWorktree bool) (Plan, error) {
	if contract != sdk.ContractBindMount && contract != sdk.ContractIsolated {
		return Plan{}, &PlanError{Attribute: "sandbox", Summary: fmt.Sprintf("unknown sandbox contract %q", contract)}
	}
	t := s.Type
	if t == "" {
		t = StrategyHead
		if contract == sdk.ContractIsolated {
			t = StrategyMergeToHead
		}
	}
	switch t {
	case StrategyHead, StrategyMergeToHead, StrategyBranch:
	default:
		detail := "valid strategies are head, merge-to-head and branch"
		if sug := suggest.Closest(string(t), []string{string(StrategyHead), string(StrategyMergeToHead), string(StrategyBranch)}); sug != "" {
			detail = fmt.Sprintf("did you mean %q? %s", sug, detail)
		}
		return Plan{}, &PlanError{Attribute: "branch_strategy.type", Summary: fmt.Sprintf("unknown branch strategy %q", t), Detail: detail}
	}
	p := Plan{Type: t, Contract: contract}
	if t != StrategyBranch {
		if s.Branch != "" {
			return Plan{}, &PlanError{Attribute: "branch_strategy.branch",
				Summary: fmt.Sprintf("branch is only valid with branch strategy %q", StrategyBranch)}
		}
		if s.BaseBranch != "" {
			return Plan{}, &PlanError{Attribute: "branch_strategy.base_branch",
				Summary: fmt.Sprintf("base_branch is only valid with branch strategy %q", StrategyBranch)}
		}
	}
	switch t {
	case StrategyHead:
		if contract == sdk.ContractIsolated {
			return Plan{}, &PlanError{Attribute: "branch_strategy.type",
				Summary: "branch strategy head is not supported by isolated sandboxes",
				Detail:  "an isolated sandbox cannot work in the host repo; use merge-to-head or branch"}
		}
		if copyToWorktree {
			return Plan{}, &PlanError{Attribute: "copy_to_worktree",
				Summary: "copy_to_worktree is not supported with branch strategy head",
				Detail:  "with head the agent works in the host repo itself; there is no worktree to copy into"}
		}
		if hostKnown && hostBranch == "" {
			return Plan{}, &PlanError{Attribute: "branch_strategy.type",
				Summary: "branch strategy head needs a branch checked out in the host repo",
				Detail:  "HEAD is detached, so the agent's commits would land on no branch; check out a branch, or use branch strategy branch"}
		}
		p.Branch, p.TargetBranch = hostBranch, hostBranch
	case StrategyMergeToHead:
		if hostKnown && hostBranch == "" {
			return Plan{}, &PlanError{Attribute: "branch_strategy.type",
				Summary: "merge-to-head needs a branch checked out in the host repo",
				Detail:  "HEAD is detached; check out the branch to merge into, or use branch strategy branch"}
		}
		p.TargetBranch = hostBranch
		p.Worktree = contract == sdk.ContractBindMount
	case StrategyBranch:
		if s.Branch == "" {
			return Plan{}, &PlanError{Attribute: "branch_strategy.branch",
				Summary: "branch strategy branch needs a branch name",
				Detail:  `for example branch_strategy = { type = "branch", branch = "agent/fix" }`}
		}
		if err := CheckBranchName(s.Branch); err != nil {
			return Plan{}, &PlanError{Attribute: "branch_strategy.branch", Summary: err.Error()}
		}
		if s.BaseBranch != "" && (strings.HasPrefix(s.BaseBranch, "-") || strings.ContainsAny(s.BaseBranch, " \t\n")) {
			return Plan{}, &PlanError{Attribute: "branch_strategy.base_branch",
				Summary: fmt.Sprintf("invalid base branch %q", s.BaseBranch)}
		}
		if hostKnown && s.Branch == hostBranch {
			return Plan{}, &PlanError{Attribute: "branch_strategy.branch",
				Summary: fmt.Sprintf("branch %s is checked out in the host repo", s.Branch),
				Detail: "git cannot check out one branch in two places; use branch strategy head to work on it " +
					"directly, merge-to-head to merge into it, or pick another branch"}
		}
		p.Branch, p.BaseBranch, p.TargetBranch = s.Branch, s.BaseBranch, s.Branch
		p.Worktree = contract == sdk.ContractBindMount
	}
	return p, nil
}

// MaxBranchName bounds a branch name, in bytes: git keeps a branch as a
// file (plus ".lock" while updating it) and sanddune its worktree as a
// directory named after it, and a file name stops at 255 bytes.
const MaxBranchName = 240

// CheckBranchName checks name against git's rules for branch names
// (git check-ref-format --branch), without running git, and against the
// length a worktree and git's ref files allow.
func CheckBranchName(name string) error {
	bad := func(why string) error { return fmt.Errorf("invalid branch name %q: %s", name, why) }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > MaxBranchName:
		return fmt.Errorf("invalid branch name %q…: %d bytes long, at most %d (git and the worktree directory store it as a file name)", name[:40], len(name), MaxBranchName)
	case name == "@" || name == "HEAD":
		return bad("reserved name")
	case strings.HasPrefix(name, "-"):
		return bad("starts with '-'")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad("empty path component")
	case strings.HasSuffix(name, "."):
		return bad("ends with '.'")
	case strings.Contains(name, ".."):
		return bad("contains '..'")
	case strings.Contains(name, "@{"):
		return bad("contains '@{'")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("contains %q", r))
		}
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") {
			return bad("a component starts with '.'")
		}
		if strings.HasSuffix(c, ".lock") {
			return bad("a component ends with '.lock'")
		}
	}
	return nil
}
