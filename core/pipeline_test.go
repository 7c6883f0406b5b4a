package core

import (
	"strings"
	"testing"
)

// pipelineBlocks are a sandbox and an agent every run of these tests uses.
const pipelineBlocks = `sandbox "box" "dev" {}
agent "cli" "a" {}
`

// TestFakePipelinePlan: depends_on and references order the runs, a
// static for_each plans one run per element with each.key/each.value in
// its attributes, and a for_each over another run's result is planned at
// run time.
func TestFakePipelinePlan(t *testing.T) {
	t.Parallel()
	path := repoWith(t, pipelineBlocks+`
run "plan" {
  prompt = "plan"
}

run "implement" {
  for_each        = ["a", "b"]
  depends_on      = [run.plan]
  prompt_file     = "impl.md"
  prompt_args     = { ITEM = each.value }
  branch_strategy = { type = "branch", branch = "agent/${each.value}" }
}

run "fan" {
  for_each        = run.plan.commits
  prompt_file     = "impl.md"
  prompt_args     = { ITEM = each.value.sha }
  branch_strategy = { type = "branch", branch = "fan/${each.key}" }
}

run "merge" {
  branch_strategy = "merge-to-head"
  merge_branches  = [for r in run.implement : r.branch]
  prompt          = "merge"
}

pipeline "all" {
  runs         = [run.plan, run.implement, run.fan, run.merge]
  max_parallel = 3
}
`, "impl.md", "do {{ITEM}}")
	p, err := plan(t, path, newPlugins(), Selection{Runs: []string{"all"}})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var got []string
	for _, r := range p.Runs {
		got = append(got, r.Name+":"+r.Branch+":"+strings.Join(r.DependsOn, ","))
	}
	want := []string{"plan:main:", "implement-0:agent/a:run.plan", "implement-1:agent/b:run.plan", "fan:pending:run.plan", "merge::run.implement"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("planned %v, want %v", got, want)
	}
	if fan := p.Runs[3]; !fan.AtRunTime || fan.ForEach != "run.plan.commits" {
		t.Fatalf("fan: at run time %v, for_each %q", fan.AtRunTime, fan.ForEach)
	}
	if p.parallel != 3 {
		t.Fatalf("parallel %d, want the pipeline's max_parallel 3", p.parallel)
	}
}

// TestFakePipelineErrors: each pipeline mistake is one error at the
// offending reference, before anything starts.
func TestFakePipelineErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src, summary string
		line               int
		sel                []string
	}{
		{"unknown run", `run "a" {
  prompt     = "x"
  depends_on = [run.plna]
}
run "plan" { prompt = "x" }`, "Reference to undeclared run", 5, nil},
		{"unknown run in an attribute", `run "a" {
  prompt = "x"
  name   = run.nope.branch
}`, "Reference to undeclared run", 5, nil},
		{"cycle", `run "a" {
  prompt     = "x"
  depends_on = [run.b]
}
run "b" {
  prompt     = "x"
  depends_on = [run.a]
}`, "Dependency cycle", 9, nil},
		{"each without for_each", `run "a" {
  prompt = "x"
  name   = each.key
}`, "each without for_each", 5, nil},
		{"static branch collision", `run "a" {
  for_each        = ["x", "y"]
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "same" }
}`, "Branch collision", 6, nil},
		{"unselected dependency", `run "a" { prompt = "x" }
run "b" {
  prompt     = "x"
  depends_on = [run.a]
}`, "Dependency not selected", 6, []string{"b"}},
		{"dependency outside the pipeline", `run "a" { prompt = "x" }
run "b" {
  prompt     = "x"
  depends_on = [run.a]
}
pipeline "p" { runs = [run.b] }`, "Dependency outside the pipeline", 6, nil},
		{"merge into head", `run "a" {
  prompt          = "x"
  branch_strategy = "head"
  merge_branches  = ["x"]
}`, "merge_branches needs a worktree", 5, nil},
		{"pipeline token budget", `run "a" { prompt = "x" }
pipeline "p" {
  runs         = [run.a]
  token_budget = -5
}`, "Invalid token_budget", 6, nil},
		{"for_each not a collection", `run "a" {
  prompt   = "x"
  for_each = "abc"
}`, "Invalid for_each", 5, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := repoWith(t, pipelineBlocks+c.src+"\n")
			p, err := plan(t, path, newPlugins(), Selection{Strict: c.sel == nil, Runs: c.sel})
			if err == nil {
				t.Fatalf("accepted; diagnostics:\n%v", p.Diagnostics)
			}
			d := only(t, p.Diagnostics, c.summary)
			if d.Subject == nil || d.Subject.Start.Line != c.line {
				t.Fatalf("%q at %v, want line %d", d.Summary, d.Subject, c.line)
			}
		})
	}
}

// TestFakeUnselectedDependencySuggestsAWorkingSelection: the suggested
// command selects every run the selected one needs, directly or not.
func TestFakeUnselectedDependencySuggestsAWorkingSelection(t *testing.T) {
	t.Parallel()
	path := repoWith(t, pipelineBlocks+`run "plan" { prompt = "x" }
run "implement" {
  prompt     = "x"
  depends_on = [run.plan]
}
run "merge" {
  prompt     = "x"
  depends_on = [run.implement]
}
`)
	p, err := plan(t, path, newPlugins(), Selection{Runs: []string{"merge"}})
	if err == nil {
		t.Fatal("accepted")
	}
	if d := only(t, p.Diagnostics, "Dependency not selected"); !strings.Contains(d.Detail, "(sanddune run plan implement merge)") {
		t.Fatalf("detail %q: want a selection with what merge needs", d.Detail)
	}
}
