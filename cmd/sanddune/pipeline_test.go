package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pipelineJSON is the part of `run --json` the pipeline tests read.
type pipelineJSON struct {
	Runs []struct {
		Name    string
		Branch  *string
		Commits []struct{ SHA string }
		Error   *struct{ Message string }
		Skipped *string
	}
}

func runPipeline(t *testing.T, dir string, args ...string) (pipelineJSON, result) {
	t.Helper()
	r := run(t, dir, args...)
	var doc pipelineJSON
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d, stdout is not JSON (%v):\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	return doc, r
}

// commitsAgent is a command agent that commits n files named <prefix><i>.
func commitsAgent(prefix string, n int) string {
	script := "cat > /dev/null; for i in $(seq 0 " + itoa(n-1) + "); do echo $i > " + prefix + "$i.txt; git add -A; git -c user.name=agent -c user.email=agent@example.com commit -qm " + prefix + "$i; done; echo '<promise>COMPLETE</promise>'"
	return `["sh", "-c", "` + script + `"]`
}

// TestPipelinePlansFansOutAndMerges is the parallel planner with
// scripted agents in local sandboxes: the plan run's structured output
// lists 3 issues, for_each runs implement on each issue's branch, at
// once, and the merge run merges the 3 branches into the host branch
// before its agent starts, with {{BRANCHES}} in its prompt.
func TestPipelinePlansFansOutAndMerges(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/merge.md"), "merge these:\n{{BRANCHES}}\nconflicts: {{CONFLICTS}}\n")
	writeFile(t, filepath.Join(dir, ".sanddune/implement.md"), "implement {{ID}} {{TITLE}} on {{SOURCE_BRANCH}}\n")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "planner" {
  command = ["sh", "-c", "cat > /dev/null; echo '<plan>{\"issues\": [{\"id\": \"1\", \"title\": \"one\", \"branch\": \"agent/issue-1\"}, {\"id\": \"2\", \"title\": \"two\", \"branch\": \"agent/issue-2\"}, {\"id\": \"3\", \"title\": \"three\", \"branch\": \"agent/issue-3\"}]}</plan>'"]
}
agent "command" "implementer" {
  command = ["sh", "-c", "read -r verb id title on branch; echo \"$verb $id $title $on $branch\" > issue-$id.txt; git add -A; git -c user.name=agent -c user.email=agent@example.com commit -qm \"issue $id\"; echo '<promise>COMPLETE</promise>'"]
}
agent "command" "merger" {
  command = ["sh", "-c", "cat > merge-prompt.txt; git add -A; git -c user.name=agent -c user.email=agent@example.com commit -qm merged; echo '<promise>COMPLETE</promise>'"]
}

run "plan" {
  agent  = agent.command.planner
  prompt = "plan the issues; answer <plan>{\"issues\": [...]}</plan>"
  output {
    tag    = "plan"
    schema = { type = "object", required = ["issues"], properties = { issues = { type = "array" } } }
  }
}

run "implement" {
  for_each        = run.plan.output.issues
  agent           = agent.command.implementer
  prompt_file     = "implement.md"
  prompt_args     = { ID = each.value.id, TITLE = each.value.title }
  branch_strategy = { type = "branch", branch = each.value.branch }
}

run "merge" {
  agent           = agent.command.merger
  branch_strategy = "merge-to-head"
  merge_branches  = [for r in run.implement : r.branch]
  prompt_file     = "merge.md"
}

pipeline "planner" {
  runs         = [run.plan, run.implement, run.merge]
  max_parallel = 3
}
`)
	doc, r := runPipeline(t, dir, "run", "planner", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var names []string
	for _, o := range doc.Runs {
		names = append(names, o.Name)
		if o.Error != nil || o.Skipped != nil {
			t.Fatalf("%s: error %v, skipped %v", o.Name, o.Error, o.Skipped)
		}
	}
	if got := strings.Join(names, " "); got != "plan implement-0 implement-1 implement-2 merge" {
		t.Fatalf("runs %q", got)
	}
	// Each implementer got its own issue and branch, and the branches are
	// merged into main.
	for i, title := range []string{"one", "two", "three"} {
		id := itoa(i + 1)
		b := "agent/issue-" + id
		if got, want := gitOut(t, dir, "show", b+":issue-"+id+".txt"), "implement "+id+" "+title+" on "+b; got != want {
			t.Fatalf("%s got prompt %q, want %q", b, got, want)
		}
		if err := exec.Command("git", "-C", dir, "merge-base", "--is-ancestor", b, "main").Run(); err != nil {
			t.Fatalf("%s is not merged into main", b)
		}
	}
	// The merge commits name the branch the work ends up on, not the
	// merge-to-head run's temporary branch.
	if merges := gitOut(t, dir, "log", "--merges", "--format=%s", "main"); !strings.Contains(merges, "Merge branch 'agent/issue-2' into main") || strings.Contains(merges, "sanddune/") {
		t.Fatalf("merge commits:\n%s", merges)
	}
	prompt := gitOut(t, dir, "show", "main:merge-prompt.txt")
	if want := "merge these:\n- agent/issue-1\n- agent/issue-2\n- agent/issue-3\nconflicts: none"; prompt != want {
		t.Fatalf("merge prompt %q, want %q", prompt, want)
	}
}

// TestPipelineFailureSkipsOnlyDependents: a failed run skips the runs
// that depend on it, directly or not, and nothing else; --json says which
// were skipped and why, and the exit code is the failure's.
func TestPipelineFailureSkipsOnlyDependents(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "fail" {
  command = ["sh", "-c", "cat > /dev/null; exit 3"]
}
agent "command" "ok" {
  command = ["sh", "-c", "cat > /dev/null; echo '<promise>COMPLETE</promise>'"]
}
run "broken" {
  agent  = agent.command.fail
  prompt = "x"
}
run "after" {
  agent      = agent.command.ok
  prompt     = "x"
  depends_on = [run.broken]
}
run "later" {
  agent      = agent.command.ok
  prompt     = "x"
  depends_on = [run.after]
}
run "independent" {
  agent  = agent.command.ok
  prompt = "x"
}
`)
	doc, r := runPipeline(t, dir, "run", "--json", "-p", "2")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	got := map[string]string{}
	for _, o := range doc.Runs {
		switch {
		case o.Skipped != nil:
			got[o.Name] = "skipped: " + *o.Skipped
		case o.Error != nil:
			got[o.Name] = "failed"
		default:
			got[o.Name] = "ok"
		}
	}
	want := map[string]string{
		"broken": "failed", "after": "skipped: run.broken did not succeed",
		"later": "skipped: run.after did not succeed", "independent": "ok",
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	// The summary says it too.
	r = run(t, dir, "run", "after", "broken")
	if !strings.Contains(r.stderr, "- after: skipped: run.broken did not succeed") {
		t.Fatalf("summary lacks the skipped run:\n%s", r.stderr)
	}
}

// TestPipelineConflictStopsWithBranchesKept: with on_merge_conflict =
// "stop", branches that do not merge cleanly stop the merge run before
// its agent starts; every branch is kept, and the error names the
// conflicting branch and file.
func TestPipelineConflictStopsWithBranchesKept(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	for _, b := range []string{"a", "b"} {
		gitOut(t, dir, "branch", b)
		wt := filepath.Join(t.TempDir(), b)
		gitOut(t, dir, "worktree", "add", "-q", wt, b)
		writeFile(t, filepath.Join(wt, "same.txt"), b)
		gitOut(t, wt, "add", "-A")
		gitOut(t, wt, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", b)
		gitOut(t, dir, "worktree", "remove", wt)
	}
	tipA, tipB := gitOut(t, dir, "rev-parse", "a"), gitOut(t, dir, "rev-parse", "b")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "ok" {
  command = ["sh", "-c", "cat > /dev/null; touch agent-ran; git add -A; git -c user.name=agent -c user.email=agent@example.com commit -qm ran; echo '<promise>COMPLETE</promise>'"]
}
run "merge" {
  agent             = agent.command.ok
  prompt            = "merge"
  branch_strategy   = { type = "branch", branch = "integration" }
  merge_branches    = ["a", "b"]
  on_merge_conflict = "stop"
}
`)
	doc, r := runPipeline(t, dir, "run", "--json")
	if r.code != 1 || len(doc.Runs) != 1 || doc.Runs[0].Error == nil {
		t.Fatalf("exit %d, want a failed run\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if msg := doc.Runs[0].Error.Message; !strings.Contains(msg, "b (same.txt) did not merge cleanly into integration") {
		t.Fatalf("error does not name the conflict: %s", msg)
	}
	if gitOut(t, dir, "rev-parse", "a") != tipA || gitOut(t, dir, "rev-parse", "b") != tipB {
		t.Fatal("a merged branch moved")
	}
	if gitOut(t, dir, "rev-parse", "integration") != tipA {
		t.Fatal("integration is not a, fast-forwarded, alone")
	}
	if err := exec.Command("git", "-C", dir, "cat-file", "-e", "integration:agent-ran").Run(); err == nil {
		t.Fatal("the agent ran despite the conflict")
	}
}

// TestGraphPrintsTheDAG: sanddune graph prints the runs dependencies
// first, with their pipeline, for_each and merge_branches, without
// starting a plugin; a cycle is an error at its reference.
func TestGraphPrintsTheDAG(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	cfg := filepath.Join(dir, ".sanddune/sanddune.hcl")
	writeFile(t, cfg, `sandbox "nosuchplugin" "x" {}
agent "command" "a" { command = ["true"] }
run "merge" {
  prompt          = "m"
  branch_strategy = "merge-to-head"
  merge_branches  = [for r in run.implement : r.branch]
}
run "implement" {
  for_each        = run.plan.commits
  prompt          = "i"
  branch_strategy = { type = "branch", branch = "item-${each.key}" }
}
run "plan" { prompt = "p" }
pipeline "planner" { runs = [run.plan, run.implement, run.merge] }
`)
	r := run(t, dir, "graph")
	want := `run.plan  (pipeline planner)
run.implement  (pipeline planner)
  after:          run.plan
  for_each:       run.plan.commits
run.merge  (pipeline planner)
  after:          run.implement
  merge_branches: [for r in run.implement : r.branch]
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	if r := run(t, dir, "graph", "--dot"); !strings.Contains(r.stdout, `"plan" -> "implement";`) {
		t.Fatalf("dot:\n%s", r.stdout)
	}
	writeFile(t, cfg, `run "a" {
  prompt     = "x"
  depends_on = [run.b]
}
run "b" {
  prompt     = "x"
  depends_on = [run.a]
}
`)
	r = run(t, dir, "graph")
	if r.code != 1 || !strings.Contains(r.stderr, "sanddune.hcl:7:17: Error: Dependency cycle") || !strings.Contains(r.stderr, "run.a → run.b → run.a") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestValidateRefusesAStaticBranchCollision: instances of a static
// for_each that share a branch are a validate error at branch_strategy.
func TestValidateRefusesAStaticBranchCollision(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" { command = ["true"] }
run "implement" {
  for_each        = { api = "x", web = "y" }
  prompt          = "implement ${each.key}"
  branch_strategy = { type = "branch", branch = "agent/${each.value == "x" ? "same" : "same"}" }
}
`)
	r := run(t, dir, "validate")
	if r.code != 1 || !strings.Contains(r.stderr, "sanddune.hcl:6:21: Error: Branch collision") || !strings.Contains(r.stderr, `the for_each instances "implement-api" and "implement-web" both work on agent/same`) {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestPipelineRuntimeBranchCollision: instances of a for_each over a
// result that would share a branch fail before any of them starts, with
// an error naming the run, the instances and the branch; the run that
// produced the result keeps its work.
func TestPipelineRuntimeBranchCollision(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "planner" {
  command = `+commitsAgent("plan", 2)+`
}
agent "command" "ok" {
  command = ["sh", "-c", "cat > /dev/null; echo '<promise>COMPLETE</promise>'"]
}
run "plan" {
  agent  = agent.command.planner
  prompt = "plan"
}
run "implement" {
  for_each        = run.plan.commits
  agent           = agent.command.ok
  prompt          = "implement"
  branch_strategy = { type = "branch", branch = "agent/same" }
}
`)
	doc, r := runPipeline(t, dir, "run", "--json")
	if r.code != 1 || len(doc.Runs) != 2 || doc.Runs[1].Error == nil {
		t.Fatalf("exit %d, want implement to fail\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	msg := doc.Runs[1].Error.Message
	if !strings.Contains(msg, `run "implement"`) || !strings.Contains(msg, `run "implement": plan failed: run.implement.branch_strategy: Branch collision: the for_each instances "implement-0" and "implement-1" both work on agent/same`) {
		t.Fatalf("error: %s", msg)
	}
	if len(doc.Runs[0].Commits) != 2 || doc.Runs[0].Error != nil {
		t.Fatalf("plan: %+v", doc.Runs[0])
	}
	if err := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", "agent/same").Run(); err == nil {
		t.Fatal("an instance started: agent/same exists")
	}
}

// TestRunContinuingAnotherRunsBranchIsNotWarned: a run planned from
// another run's result on that run's branch (a review of an implement run)
// continues it without the "left by an earlier run?" warning, which a
// branch left by a failed run still gets.
func TestRunContinuingAnotherRunsBranchIsNotWarned(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "commit" {
  command = `+commitsAgent("f", 1)+`
}
run "implement" {
  allow_unconfined = true
  prompt           = "x"
  branch_strategy  = { type = "branch", branch = "agent/work" }
}
run "review" {
  allow_unconfined = true
  for_each         = [run.implement]
  prompt           = "review"
  branch_strategy  = { type = "branch", branch = each.value.branch }
  logging {
    type = "stdout"
  }
}
`)
	r := run(t, dir, "run", "implement", "review")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	if strings.Contains(out, "already exists") || !strings.Contains(out, "continuing run.implement's branch agent/work") {
		t.Fatalf("want the review to continue run.implement's branch without a warning:\n%s", out)
	}
}
