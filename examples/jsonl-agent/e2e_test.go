package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunThroughSanddune drives the real sanddune with this plugin and the
// fake CLI in a local sandbox: the completion signal is found in the
// result event, --json reports the result text as stdout and the session
// id, the session is captured to the host, and a second run resumes it.
func TestRunThroughSanddune(t *testing.T) {
	bin := t.TempDir()
	// sanddune (which serves the local sandbox itself) is built in its own
	// module (the repository root); the plugin in this one, against the
	// sdk module only.
	for _, b := range [][3]string{{"/", "../..", "./cmd/sanddune"}, {"sanddune-plugin-jsonl", ".", "."}} {
		if out, err := exec.Command("go", append([]string{"build", "-C", b[1], "-o", filepath.Join(bin, b[0])}, strings.Fields(b[2])...)...).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[2], err, out)
		}
	}
	fake, _ := filepath.Abs("testdata/fake-jsonl")
	repo, home := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	config := `sandbox "local" "l" {}
agent "jsonl" "fake" { binary = "` + fake + `" }
run "save" {
  sandbox         = sandbox.local.l
  agent           = agent.jsonl.fake
  prompt          = "save this"
  branch_strategy = { type = "branch", branch = "jsonl/save" }
}
run "resume" {
  sandbox         = sandbox.local.l
  agent           = agent.jsonl.fake
  prompt          = "go on"
  resume_session  = "s-1"
  branch_strategy = { type = "branch", branch = "jsonl/resume" }
}
`
	if err := os.MkdirAll(filepath.Join(repo, ".sanddune"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".sanddune", "sanddune.hcl"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Runs []struct {
			Name, Branch, Stdout string
			CompletionSignal     *string `json:"completion_signal"`
			Commits              []struct{ SHA string }
			Iterations           []struct {
				SessionID string `json:"session_id"`
			}
			Error *string
		}
	}
	run := func(name string) result {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "sanddune"), "run", name, "--json")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, ".local/share"), "SANDDUNE_PLUGIN_PATH="+bin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sanddune run %s: %v\n%s%s", name, err, out, stderr.String())
		}
		var r result
		if err := json.Unmarshal(out, &r); err != nil || len(r.Runs) != 1 {
			t.Fatalf("sanddune run %s --json: %v\n%s", name, err, out)
		}
		return r
	}

	r := run("save").Runs[0]
	if r.CompletionSignal == nil || *r.CompletionSignal != "<promise>COMPLETE</promise>" || r.Error != nil {
		t.Fatalf("run save: completion signal %v, error %v", r.CompletionSignal, r.Error)
	}
	if r.Stdout != "saved the prompt <promise>COMPLETE</promise>" {
		t.Errorf("run save: stdout %q, want the result event's text", r.Stdout)
	}
	if len(r.Iterations) != 1 || r.Iterations[0].SessionID != "s-1" || len(r.Commits) != 1 {
		t.Errorf("run save: iterations %+v, commits %+v", r.Iterations, r.Commits)
	}
	if _, err := os.Stat(filepath.Join(home, ".jsonl/sessions/s-1.jsonl")); err != nil {
		t.Errorf("the session was not captured to the host: %v", err)
	}
	// The fake fails when the session it resumes is not in its home: the
	// host must have put the captured file back into the new sandbox.
	r = run("resume").Runs[0]
	if r.Error != nil || len(r.Iterations) != 1 || r.Iterations[0].SessionID != "s-1" || len(r.Commits) != 1 {
		t.Fatalf("run resume: error %v, iterations %+v, commits %+v", r.Error, r.Iterations, r.Commits)
	}
	log := exec.Command("git", "log", "-1", "--format=%s", "jsonl/resume")
	log.Dir = repo
	if out, err := log.Output(); err != nil || strings.TrimSpace(string(out)) != "jsonl: save the prompt (session s-1, resumed true)" {
		t.Errorf("the resumed run's commit is %q (%v): the CLI did not get --resume s-1", out, err)
	}
}
