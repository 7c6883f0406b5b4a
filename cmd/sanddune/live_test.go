package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// steppedAgent is a command agent script: its prompt is the run's name;
// each iteration commits a line to progress.txt, prints "working on
// <name> step <n>" and waits for the file <gates>/<name>-<n>, and the
// second iteration signals completion. The test moves each run on.
func steppedAgent(gates string) string {
	return `#!/bin/sh
name=$(cat)
n=$(( $(cat progress.txt 2>/dev/null | wc -l) + 1 ))
echo "$name $n" >> progress.txt
git add progress.txt && git -c user.name=a -c user.email=a@example.com commit -qm "$name $n"
echo "working on $name step $n"
while [ ! -f ` + gates + `/$name-$n ]; do sleep 0.05; done
if [ $n -ge 2 ]; then echo '<promise>COMPLETE</promise>'; fi
`
}

// threeRunPipeline writes a pipeline of three stepped runs in local
// sandboxes: alpha and beta at once (max_parallel 2), gamma after alpha.
func threeRunPipeline(t *testing.T, dir, gates string) {
	script := filepath.Join(t.TempDir(), "agent.sh")
	writeFile(t, script, steppedAgent(gates))
	cfg := `sandbox "local" "dev" {}
agent "command" "stepped" {
  command = ["sh", "` + script + `"]
}
`
	for _, r := range []string{"alpha", "beta", "gamma"} {
		cfg += fmt.Sprintf(`run %q {
  agent           = agent.command.stepped
  prompt          = %q
  max_iterations  = 2
  branch_strategy = { type = "branch", branch = "agent/%s" }
%s}
`, r, r, r, map[bool]string{true: "  depends_on      = [run.alpha]\n"}[r == "gamma"])
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), cfg+`pipeline "p" {
  runs         = [run.alpha, run.beta, run.gamma]
  max_parallel = 2
}
`)
}

// tmuxTerm is a terminal: a tmux server of the test's own (its socket
// name is unique), one window of the given size.
type tmuxTerm struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T, width, height int, command string) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	tm := &tmuxTerm{t: t, socket: fmt.Sprintf("sanddune-test-%d-%s", os.Getpid(), regexp.MustCompile(`\W`).ReplaceAllString(t.Name(), "-"))}
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.socket, "kill-server").Run() })
	tm.tmux("new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "-s", "t", command)
	return tm
}

// sandduneInTmux runs sanddune with args (and env added) in dir in a
// tmux terminal, then prints EXIT=<its exit code>.
func sandduneInTmux(t *testing.T, dir string, width, height int, env []string, args ...string) *tmuxTerm {
	t.Helper()
	var words []string
	for _, w := range append(append(append([]string{"env"}, sandduneCmd(dir).Env[len(os.Environ()):]...), env...), append([]string{sanddune}, args...)...) {
		words = append(words, "'"+w+"'")
	}
	return newTmux(t, width, height, fmt.Sprintf("cd '%s' && %s; echo EXIT=$?; exec cat", dir, strings.Join(words, " ")))
}

func (tm *tmuxTerm) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// mustShow fails the test unless screen s matches every pattern.
func mustShow(t *testing.T, s string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(`(?m)` + p).MatchString(s) {
			t.Fatalf("the screen lacks %s:\n%s", p, s)
		}
	}
}

// screen is what the terminal shows.
func (tm *tmuxTerm) screen() string { return tm.tmux("capture-pane", "-p", "-t", "t") }

// waitFor waits until the screen has a line matching each pattern, and
// returns it.
func (tm *tmuxTerm) waitFor(patterns ...string) string {
	tm.t.Helper()
	var s string
	eventually(tm.t, func() string { return fmt.Sprintf("%q on the screen:\n%s", patterns, s) }, func() bool {
		s = tm.screen()
		for _, p := range patterns {
			if !regexp.MustCompile(`(?m)` + p).MatchString(s) {
				return false
			}
		}
		return true
	})
	return s
}

// TestLiveViewInATerminal drives `sanddune run` in a real terminal (tmux)
// through a three-run pipeline and reads the screen as a person would:
// one line per run with its phase and iteration, redrawn in place as the
// runs move on (a finished run collapses to its summary, a run waiting
// for another starts when it is done), and at the end, in the view's
// place, the summary table.
func TestLiveViewInATerminal(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	gates := t.TempDir()
	threeRunPipeline(t, dir, gates)
	gate := func(name string) { writeFile(t, filepath.Join(gates, name), "") }
	tm := sandduneInTmux(t, dir, 120, 30, nil, "run", "p")

	once := func(s, what string) {
		t.Helper()
		if n := strings.Count(s, what); n != 1 {
			t.Fatalf("%q %d times on the screen (the view must redraw in place):\n%s", what, n, s)
		}
	}
	s := tm.waitFor(
		`^pipeline p$`,
		`^  \S alpha\s+iteration 1/2\s+\d+s\s+-\s+working on alpha step 1$`,
		`^  \S beta\s+iteration 1/2\s+\d+s\s+-\s+working on beta step 1$`,
		`^  · gamma\s+waiting\s+-\s+after run.alpha$`)
	once(s, "pipeline p")
	if strings.Contains(s, "tail -f") {
		t.Fatalf("the live view shows the file-mode hint:\n%s", s)
	}

	gate("alpha-1")
	s = tm.waitFor(`alpha\s+iteration 2/2\s+\d+s\s+-\s+working on alpha step 2$`, `beta\s+iteration 1/2`, `gamma\s+waiting`)
	once(s, "pipeline p")

	gate("alpha-2")
	s = tm.waitFor(`^  ✓ alpha\s+done\s+\d+s\s+-\s+2 iteration\(s\), 2 commit\(s\) on agent/alpha$`,
		`gamma\s+iteration 1/2\s+\d+s\s+-\s+working on gamma step 1$`, `beta\s+iteration 1/2`)
	once(s, " alpha ")

	for _, g := range []string{"beta-1", "beta-2", "gamma-1", "gamma-2"} {
		gate(g)
	}
	s = tm.waitFor(`^EXIT=0$`)
	mustShow(t, s,
		`^RUN\s+STATUS\s+ITERATIONS\s+COMMITS\s+BRANCH\s+TOKENS\s+TIME$`,
		`^alpha\s+✓ done\s+2\s+2\s+agent/alpha\s+-\s+\d+s$`,
		`^beta\s+✓ done\s+2\s+2\s+agent/beta\s+-\s+\d+s$`,
		`^gamma\s+✓ done\s+2\s+2\s+agent/gamma\s+-\s+\d+s$`)
	if strings.Contains(s, "pipeline p") || strings.Contains(s, "iteration 1/2") {
		t.Fatalf("the view is left on the screen under the table:\n%s", s)
	}
}

// TestLiveViewNeverWhenPiped: with stdout and stderr not a terminal, the
// output is today's, line for line: the file-mode hints, a summary line
// per run, no escape sequence and no table.
func TestLiveViewNeverWhenPiped(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	gates := t.TempDir()
	threeRunPipeline(t, dir, gates)
	for _, g := range []string{"alpha-1", "alpha-2", "beta-1", "beta-2", "gamma-1", "gamma-2"} {
		writeFile(t, filepath.Join(gates, g), "")
	}
	r := run(t, dir, "run", "p")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "\x1b") || strings.Contains(r.stdout, "STATUS") {
		t.Fatalf("piped output has escapes or the table:\n%q\n%q", r.stdout, r.stderr)
	}
	want := regexp.MustCompile(`^✓ alpha: 2 commit\(s\) on agent/alpha, completed with <promise>COMPLETE</promise>
✓ beta: 2 commit\(s\) on agent/beta, completed with <promise>COMPLETE</promise>
✓ gamma: 2 commit\(s\) on agent/gamma, completed with <promise>COMPLETE</promise>
$`)
	if !want.MatchString(r.stdout) {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if !regexp.MustCompile(`(?m)^\[` + name + `\] logging to \S+\.log\n  tail -f \S+\.log$`).MatchString(r.stderr) {
			t.Fatalf("stderr lacks %s's hint:\n%s", name, r.stderr)
		}
	}
}

// TestLiveViewCtrlC: Ctrl-C in the terminal stops the runs mid-iteration;
// the view gives way to the table, which says each run was cancelled
// with its commit kept, then each error in full, and sanddune exits 130.
func TestLiveViewCtrlC(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	threeRunPipeline(t, dir, t.TempDir()) // no gate: the agents wait until stopped
	tm := sandduneInTmux(t, dir, 120, 40, nil, "run", "alpha", "beta", "-p", "2")
	tm.waitFor(`alpha\s+iteration 1/2\s+.*working on alpha step 1$`, `beta\s+iteration 1/2\s+.*working on beta step 1$`)
	tm.tmux("send-keys", "-t", "t", "C-c")
	s := tm.waitFor(`^EXIT=130$`)
	mustShow(t, s,
		`^alpha\s+✗ cancelled\s+1\s+1\s+agent/alpha\s+-\s+\d+s$`,
		`^beta\s+✗ cancelled\s+1\s+1\s+agent/beta\s+-\s+\d+s$`,
		`^✗ alpha: run "alpha" cancelled during agent \(iteration 1\)`,
		`^  1 commit\(s\) kept on branch agent/alpha$`)
	if strings.Contains(s, "iteration 1/2") || strings.Contains(s, "stopping:") {
		t.Fatalf("the view is left on the screen:\n%s", s)
	}
}

// TestLiveViewCountsTokens: the tokens an agent reports (a fake Claude
// Code's stream-json usage) show on its line while it still works, and in
// the table's TOKENS column at the end.
func TestLiveViewCountsTokens(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	fixture := filepath.Join(t.TempDir(), "stream.jsonl")
	writeFile(t, fixture, claudeAnswer(t, "notes", "all done <promise>COMPLETE</promise>")) // 1 in, 1 out
	env := agentEnv(t, dir, "claude", "#!/bin/sh\ncat > /dev/null\ncat \"$FIXTURE\"\nwhile [ ! -f \"$FIXTURE.gate\" ]; do sleep 0.05; done\n", fixture)
	env = append(env, "ANTHROPIC_API_KEY=sk-fake")
	cfg := `sandbox "local" "dev" {}
agent "claude" "c" {}
`
	for _, r := range []string{"one", "two"} {
		cfg += fmt.Sprintf(`run %q {
  prompt           = "go"
  allow_unconfined = true # the fake claude runs on the host
  branch_strategy  = { type = "branch", branch = "agent/%s" }
}
`, r, r)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), cfg)
	tm := sandduneInTmux(t, dir, 120, 30, env, "run", "-p", "2")
	tm.waitFor(`^  \S one\s+iteration 1/1\s+\d+s\s+2\s+all done`, `^  \S two\s+iteration 1/1\s+\d+s\s+2\s+all done`)
	writeFile(t, fixture+".gate", "")
	s := tm.waitFor(`^EXIT=0$`)
	mustShow(t, s, `^one\s+✓ done\s+1\s+0\s+agent/one\s+2\s+\d+s$`, `^two\s+✓ done\s+1\s+0\s+agent/two\s+2\s+\d+s$`)
}
