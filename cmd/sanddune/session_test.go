package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

type sessionJSON struct {
	Runs []struct {
		Name    string
		Branch  string
		Commits []struct{ SHA string }
		Error   *jsonError
		Steps   []struct {
			Name       string
			Branch     string
			Commits    []struct{ SHA string }
			Iterations []struct {
				SessionID *string `json:"session_id"`
			}
			Error *jsonError
		}
	}
}

func runSessionJSON(t *testing.T, dir string, env []string, args ...string) (sessionJSON, result) {
	t.Helper()
	var doc sessionJSON
	r := runJSONDoc(t, dir, env, &doc, func() int { return len(doc.Runs) }, args...)
	return doc, r
}

// commitStep is a command agent that runs script, then commits what it
// left in the worktree with message msg.
func commitStep(script, msg string) string {
	return `["sh", "-c", "cat > /dev/null; ` + script + ` git add -A && git -c user.name=agent -c user.email=agent@example.com commit -qm '` + msg + `' && echo '<promise>COMPLETE</promise>'"]`
}

// TestSessionInDockerSharesOneSandbox runs a session of three steps in
// docker: step 1 installs a file under the sandbox's home, outside the
// worktree; step 3 finds it there. Each step reports its own commits, the
// session its branch and all of them, and no container is left.
func TestSessionInDockerSharesOneSandbox(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "docker" "d" {
  image = "`+testImage()+`"
}
agent "command" "install" {
  command = `+commitStep(`echo installed > $HOME/tool.txt; echo one > one.txt;`, "step 1")+`
}
agent "command" "idle" {
  command = ["sh", "-c", "cat > /dev/null; echo '<promise>COMPLETE</promise>'"]
}
agent "command" "use" {
  command = `+commitStep(`cat $HOME/tool.txt > seen.txt;`, "step 3")+`
}
session "build" {
  sandbox         = sandbox.docker.d
  branch_strategy = { type = "branch", branch = "agent/build" }
  step "install" {
    agent  = agent.command.install
    prompt = "install"
  }
  step "idle" {
    agent  = agent.command.idle
    prompt = "nothing"
  }
  step "use" {
    agent  = agent.command.use
    prompt = "use it"
  }
}
`)
	doc, r := runSessionJSON(t, dir, nil, "run", "build", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	s := doc.Runs[0]
	if s.Name != "build" || s.Branch != "agent/build" || len(s.Commits) != 2 || len(s.Steps) != 3 {
		t.Fatalf("session result %+v", s)
	}
	for i, want := range []int{1, 0, 1} {
		if st := s.Steps[i]; len(st.Commits) != want || st.Error != nil || st.Branch != "agent/build" {
			t.Errorf("step %d (%s): %d commit(s), error %v, branch %s; want %d, none, agent/build", i+1, st.Name, len(st.Commits), st.Error, st.Branch, want)
		}
	}
	if s.Steps[0].Commits[0].SHA != s.Commits[0].SHA || s.Steps[2].Commits[0].SHA != s.Commits[1].SHA {
		t.Errorf("the steps' commits are not the session's, in order: %+v", s)
	}
	if got := gitOut(t, dir, "show", "agent/build:seen.txt"); got != "installed" {
		t.Fatalf("step 3 did not see what step 1 installed in the sandbox home: seen.txt = %q", got)
	}
	if c := containers(t, dir); len(c) != 0 {
		t.Fatalf("containers left behind: %v", c)
	}
}

// TestSessionStepResumesThePreviousStep: resume = "previous" continues the
// previous step's agent session, found in the shared sandbox; a failing
// step ends the session, which reports the steps so far.
func TestSessionStepResumesThePreviousStep(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	env := agentEnv(t, dir, "claude", fakeClaude, "../../plugins/claude/testdata/claude-stream.jsonl")
	env = append(env, "ANTHROPIC_API_KEY=sk-fake")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "claude" "c" {}
agent "command" "fail" {
  command = ["sh", "-c", "exit 3"]
}
session "fix" {
  branch_strategy  = { type = "branch", branch = "agent/fix" }
  allow_unconfined = true # the fake claude runs on the host
  step "start" {
    agent  = agent.claude.c
    prompt = "start"
  }
  step "continue" {
    agent  = agent.claude.c
    prompt = "go on"
    resume = "previous"
  }
  step "fail" {
    agent  = agent.command.fail
    prompt = "fail"
  }
}
`)
	doc, r := runSessionJSON(t, dir, env, "run", "--json")
	s := doc.Runs[0]
	if r.code != 1 || s.Error == nil || !strings.Contains(s.Error.Message, "fix.fail") || len(s.Steps) != 3 || s.Steps[2].Error == nil {
		t.Fatalf("exit %d, want 1 with the failing step named: %+v\n%s", r.code, s, r.stderr)
	}
	if got := gitOut(t, dir, "show", "agent/fix:resumed.txt"); got != "resumed" {
		t.Fatalf("step 2 did not resume step 1's session: resumed.txt = %q", got)
	}
	if len(s.Steps[0].Commits) != 1 || len(s.Steps[1].Commits) != 1 || len(s.Commits) != 2 {
		t.Fatalf("commits: session %d, steps %d and %d; want 2, 1 and 1", len(s.Commits), len(s.Steps[0].Commits), len(s.Steps[1].Commits))
	}
}

// TestSessionPlanErrorsAreAtTheStepAttribute: a session is planned like a
// run, and a step's problems are diagnostics at the step's attribute.
func TestSessionPlanErrorsAreAtTheStepAttribute(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["true"]
}
session "s" {
  step "one" {
    prompt = "x"
    resume = "previous"
  }
  step "two" {
    prompt_file = "missing.md"
  }
}
`)
	r := run(t, dir, "validate")
	for _, want := range []string{"sanddune.hcl:8:", "Nothing to resume", "sanddune.hcl:11:", "missing.md"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Fatalf("exit %d, want 1 with %q:\n%s", r.code, want, r.stderr)
		}
	}
}

// TestTimeoutsBlock: a timeouts block sets lifecycle timeouts (the others
// keep their defaults), shown by the plan; a bad one is a diagnostic in
// the block.
func TestTimeoutsBlock(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["true"]
}
run "r" {
  prompt = "x"
  timeouts {
    create_sandbox = "7m"
  }
}
`)
	r := run(t, dir, "run", "--dry-run", "--json")
	var doc struct {
		Runs []struct{ Timeouts map[string]string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || len(doc.Runs) != 1 {
		t.Fatalf("exit %d, %v:\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if got := doc.Runs[0].Timeouts; got["create_sandbox"] != "7m0s" || got["sync_out"] != "5m0s" || got["hooks"] != "1m0s" {
		t.Fatalf("timeouts %v, want create_sandbox 7m0s and the defaults", got)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "a" {
  command = ["true"]
}
run "r" {
  prompt = "x"
  timeouts {
    merge = "soon"
  }
}
`)
	r = run(t, dir, "validate")
	if r.code != 1 || !strings.Contains(r.stderr, "sanddune.hcl:8:13:") || !strings.Contains(r.stderr, "timeouts.merge must be a positive duration") {
		t.Fatalf("exit %d, want 1 with the bad duration at its attribute:\n%s", r.code, r.stderr)
	}
}
