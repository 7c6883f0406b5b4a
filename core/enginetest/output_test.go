package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
)

// TestFakeStructuredOutputInGo: Result.Output is the last <plan> of the
// agent's final text (its result event, not its earlier text, not a tool
// call's argument), decoded with json.Number.
func TestFakeStructuredOutputInGo(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, script(`cat > /dev/null
echo 'TEXT draft <plan>{"n": "draft"}</plan>'
echo 'TOOL Bash echo <plan>{"n": "tool"}</plan>'
echo 'RESULT first <plan>{"n": 0}</plan>, final <plan>{"n": 42}</plan>'`)), &term)
	o.Prompt = "answer inside <plan>"
	o.Output = &core.OutputSpec{Tag: "plan", Schema: `{"type": "object", "properties": {"n": {"type": "integer"}}}`}
	res := run(t, o)
	m, ok := res.Output.(map[string]any)
	if !ok || m["n"] != json.Number("42") {
		t.Fatalf("Output %#v, want map[n:json.Number(42)]", res.Output)
	}
}

// TestFakeStructuredOutputErrorInGo: a payload that breaks the schema is a
// *core.StructuredOutputError inside the *core.RunError, with the raw
// match, the cause, the session to resume, and where the commit is.
func TestFakeStructuredOutputErrorInGo(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, script(`cat > /dev/null
echo x > x.txt && git add x.txt && git commit -qm x
echo 'SESSION s-1'
echo 'TOOL Bash echo <plan>{"n": 1}</plan>'
echo 'RESULT <plan>{"n": "many"}</plan>'`)), &term)
	o.Prompt = "answer inside <plan>"
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/out"}
	o.Output = &core.OutputSpec{Tag: "plan", Schema: `{"type": "object", "properties": {"n": {"type": "integer"}}}`}
	res, err := core.Run(context.Background(), o)
	var re *core.RunError
	var oe *core.StructuredOutputError
	if !errors.As(err, &re) || re.Phase != core.PhaseOutput || !errors.As(err, &oe) {
		t.Fatalf("error %v, want a RunError of phase output wrapping a StructuredOutputError", err)
	}
	if oe.Tag != "plan" || oe.Raw != `{"n": "many"}` || oe.Cause.InstancePath != "/n" || oe.SessionID != "s-1" {
		t.Fatalf("error %+v", oe)
	}
	if oe.Branch != "agent/out" || len(oe.Commits) != 1 || res == nil || res.Output != nil || len(res.Commits) != 1 || oe.Commits[0].SHA != res.Commits[0].SHA {
		t.Fatalf("error branch %q commits %v; result %+v", oe.Branch, oe.Commits, res)
	}
	if !strings.Contains(err.Error(), `resume_session = "s-1"`) {
		t.Fatalf("message does not say how to resume:\n%v", err)
	}
}

// TestFakeStructuredOutputErrorDoesNotMerge: a merge-to-head run whose
// output is refused does not merge; its commit stays on the kept
// temporary branch, which the error names.
func TestFakeStructuredOutputErrorDoesNotMerge(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	before := git(t, repo, "rev-parse", "main")
	var term buffer
	o := options(repo, localSandbox(t), fake(t, script(`cat > /dev/null
echo x > x.txt && git add x.txt && git commit -qm x
echo 'RESULT no tag here'`)), &term)
	o.Prompt = "answer inside <plan>"
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyMergeToHead}
	o.Output = &core.OutputSpec{Tag: "plan", Type: core.OutputString}
	_, err := core.Run(context.Background(), o)
	var oe *core.StructuredOutputError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v, want a StructuredOutputError", err)
	}
	if after := git(t, repo, "rev-parse", "main"); after != before {
		t.Fatalf("main moved from %s to %s: a refused output was merged", before, after)
	}
	if !strings.HasPrefix(oe.Branch, "sanddune/test/") || len(oe.Commits) != 1 || git(t, repo, "rev-parse", oe.Branch) != oe.Commits[0].SHA {
		t.Fatalf("error branch %q commits %v, want the kept temporary branch holding the commit", oe.Branch, oe.Commits)
	}
}
