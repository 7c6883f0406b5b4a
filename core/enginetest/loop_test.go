package enginetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

// iterationScript commits a file named after the iteration, reports a
// session and usage, and prints sig on iteration sigAt (never when 0).
func iterationScript(sigAt int, sig string) func(int) string {
	return func(n int) string {
		s := commitScript(fmt.Sprintf("it%d.txt", n)) +
			fmt.Sprintf(" && echo 'SESSION s%d' && echo 'USAGE %d %d' && echo 'TEXT iteration %d done'", n, 10*n, n, n)
		if n == sigAt {
			s += " && echo 'TEXT " + sig + "'"
		}
		return s
	}
}

func TestFakeMaxIterationsWithoutSignal(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, &fakeAgent{Script: iterationScript(0, "")}), &term)
	o.MaxIterations = 3
	res := run(t, o)
	if len(res.Iterations) != 3 {
		t.Fatalf("%d iterations, want all 3", len(res.Iterations))
	}
	if res.CompletionSignal != "" || len(res.Commits) != 3 {
		t.Errorf("signal %q, %d commits; want none and 3", res.CompletionSignal, len(res.Commits))
	}
	for i, it := range res.Iterations {
		n := int64(i + 1)
		if it.SessionID != fmt.Sprintf("s%d", n) || it.Usage == nil || it.Usage.InputTokens != 10*n || it.Usage.OutputTokens != n {
			t.Errorf("iteration %d: session %q usage %+v", n, it.SessionID, it.Usage)
		}
	}
	if u := res.Usage(); u == nil || u.InputTokens != 60 || u.OutputTokens != 6 {
		t.Errorf("total usage %+v", u)
	}
	if !strings.Contains(term.String()+readLog(t, res), "without a completion signal") {
		t.Errorf("no word about the missing signal in the log")
	}
}

func TestFakeSignalStopsLoop(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, &fakeAgent{Script: iterationScript(2, signal)}), &term)
	o.MaxIterations = 5
	res := run(t, o)
	if len(res.Iterations) != 2 || res.CompletionSignal != signal || len(res.Commits) != 2 {
		t.Errorf("%d iterations, signal %q, %d commits; want 2, %q, 2", len(res.Iterations), res.CompletionSignal, len(res.Commits), signal)
	}
}

// TestFakeFirstListedSignalWins: of the signals an iteration printed, the
// one listed first is reported, whatever the order they came in.
func TestFakeFirstListedSignalWins(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, script, want string
	}{
		{"SecondThenFirst", "echo 'TEXT <promise>ABORTED</promise>'; echo 'TEXT more'; echo 'TEXT <promise>DONE</promise>'", "<promise>DONE</promise>"},
		{"OnlySecond", "echo 'TEXT <promise>ABORTED</promise>'", "<promise>ABORTED</promise>"},
		{"InResult", "echo 'TEXT working'; echo 'RESULT all <promise>ABORTED</promise>'", "<promise>ABORTED</promise>"},
		{"SameLine", "echo 'TEXT <promise>ABORTED</promise> <promise>DONE</promise>'", "<promise>DONE</promise>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t)
			var term buffer
			o := options(repo, localSandbox(t), fake(t, script(c.script)), &term)
			o.MaxIterations = 3
			o.CompletionSignals = []string{"<promise>DONE</promise>", "<promise>ABORTED</promise>"}
			res := run(t, o)
			if res.CompletionSignal != c.want || len(res.Iterations) != 1 {
				t.Errorf("signal %q after %d iterations, want %q after 1", res.CompletionSignal, len(res.Iterations), c.want)
			}
		})
	}
}

// TestFakeSignalSplitAcrossDeltas: text deltas are matched as one stream.
func TestFakeSignalSplitAcrossDeltas(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	var events []sdk.Event
	o := options(repo, localSandbox(t), fake(t, script("echo 'TEXT all done <prom'; echo 'TEXT ise>COMP'; echo 'TEXT LETE</promise>'")), &term)
	o.MaxIterations = 2
	o.OnEvent = func(e core.AgentEvent) { events = append(events, e.Event) }
	res := run(t, o)
	if res.CompletionSignal != signal || len(res.Iterations) != 1 {
		t.Errorf("signal %q after %d iterations, want %q after 1", res.CompletionSignal, len(res.Iterations), signal)
	}
	if len(events) != 3 || events[1].Text != "ise>COMP" {
		t.Errorf("events %+v", events)
	}
}

// TestFakeAgentFailure: a non-zero exit fails the run with the agent's
// stderr.
func TestFakeAgentFailure(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, script("echo 'TEXT trying'; echo 'no credentials found' >&2; exit 3")), &term)
	res, err := core.Run(t.Context(), o)
	var exit *core.AgentExitError
	if !asError(err, &exit) || exit.ExitCode != 3 || !strings.Contains(err.Error(), "no credentials found") {
		t.Fatalf("err = %v; want an AgentExitError with code 3 and the agent's stderr", err)
	}
	if exitCode(err) != exitFailure || res == nil || len(res.Iterations) != 1 {
		t.Fatalf("exit code %d, result %+v", exitCode(err), res)
	}
	// merge-to-head without commits: no temporary branch is left, and the
	// result points at the host branch.
	if res.Branch != "main" || len(res.Commits) != 0 || !slices.Equal(branches(t, repo), []string{"main"}) {
		t.Errorf("branch %q, commits %v, branches %v", res.Branch, res.Commits, branches(t, repo))
	}
}

// TestFakeAgentFailureKeepsCommits: a failed merge-to-head run is not
// merged; its commits stay on the temporary branch it reports.
func TestFakeAgentFailureKeepsCommits(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), fake(t, script(commitScript("x.txt")+"; exit 1")), &term)
	res, err := core.Run(t.Context(), o)
	if exitCode(err) != exitFailure {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(res.Branch, "sanddune/test/") || len(res.Commits) != 1 ||
		!slices.Equal(revList(t, repo, "main.."+res.Branch), shas(res)) || git(t, repo, "rev-list", "--count", "main") != "1" {
		t.Errorf("branch %q, commits %v; branches %v", res.Branch, res.Commits, branches(t, repo))
	}
	if !strings.Contains(err.Error(), "1 commit(s) kept on branch "+res.Branch) {
		t.Errorf("the error does not say where the commits are:\n%v", err)
	}
}

// TestBlankLinesKept: empty output lines reach the parser (the command
// agent's text keeps its paragraphs).
func TestBlankLinesKept(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	res := run(t, options(repo, localSandbox(t), commandAgent(t, "printf 'one\\n\\ntwo\\n\\n\\nthree\\n'"), &term))
	if res.Stdout != "one\n\ntwo\n\n\nthree" {
		t.Errorf("Stdout = %q", res.Stdout)
	}
}

// TestObserverPanicRecovered: a panicking OnEvent drops events, not the
// run.
func TestObserverPanicRecovered(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, "echo one; echo '"+signal+"'"), &term)
	o.OnEvent = func(core.AgentEvent) { panic("observer bug") }
	if res := run(t, o); res.CompletionSignal != signal {
		t.Errorf("signal %q", res.CompletionSignal)
	}
}

// sessionAgent writes the session file "$HOME/.fake/<id>.json" holding the
// iteration's number and reports session <id> (id(n)); fails(n) makes
// iteration n exit 1 after that.
func sessionAgent(id func(n int) string, fails func(n int) bool) *fakeAgent {
	return &fakeAgent{
		Script: func(n int) string {
			s := fmt.Sprintf(`mkdir -p "$HOME/.fake" && echo '{"iteration":%d}' >"$HOME/.fake/%s.json" && echo 'SESSION %s'`, n, id(n), id(n))
			if fails(n) {
				s += " && exit 1"
			}
			return s
		},
		Desc: sdk.AgentDescription{Sessions: &sdk.SessionStorage{PathPattern: "{home}/.fake/{session_id}.json"}, CaptureSessions: true},
	}
}

// hostSession reads a captured session file.
func hostSession(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("captured session: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// checkSessions checks that iteration n's session s<n> was captured to
// home/.fake/s<n>.json and holds that iteration's number.
func checkSessions(t *testing.T, home string, its []core.Iteration) {
	t.Helper()
	for i, it := range its {
		want := filepath.Join(home, ".fake", fmt.Sprintf("s%d.json", i+1))
		if it.SessionFilePath != want || hostSession(t, want) != fmt.Sprintf(`{"iteration":%d}`, i+1) {
			t.Errorf("iteration %d: session file %q, want %q holding its session", i+1, it.SessionFilePath, want)
		}
	}
}

// TestFakeEverySessionCaptured: each iteration's session reaches the host
// (captured while the next iteration runs), the last one too, and each
// iteration names its own file.
func TestFakeEverySessionCaptured(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // the host side of {home}
	f := sessionAgent(func(n int) string { return fmt.Sprintf("s%d", n) }, func(int) bool { return false })
	o := options(newRepo(t), localSandbox(t), fake(t, f), &buffer{})
	o.MaxIterations = 4
	res := run(t, o)
	if len(res.Iterations) != 4 {
		t.Fatalf("%d iterations, want 4", len(res.Iterations))
	}
	checkSessions(t, home, res.Iterations)
}

// TestFakeOneSessionForAllIterationsKeepsTheLast: captures overlap the
// next iteration but run in order, so when every iteration reports the same
// session the host holds the last iteration's copy.
func TestFakeOneSessionForAllIterationsKeepsTheLast(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	f := sessionAgent(func(int) string { return "same" }, func(int) bool { return false })
	o := options(newRepo(t), localSandbox(t), fake(t, f), &buffer{})
	o.MaxIterations = 5
	res := run(t, o)
	want := filepath.Join(home, ".fake", "same.json")
	if len(res.Iterations) != 5 || res.Iterations[4].SessionFilePath != want {
		t.Fatalf("iterations %+v, want 5 with the last captured to %s", res.Iterations, want)
	}
	if got := hostSession(t, want); got != `{"iteration":5}` {
		t.Fatalf("host session = %s, want the last iteration's", got)
	}
}

// TestFakeSessionsKeptWhenALaterIterationFails: iteration 2 fails while
// iteration 1's session is still being captured; the failed run still
// returns both sessions, captured on the host.
func TestFakeSessionsKeptWhenALaterIterationFails(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	f := sessionAgent(func(n int) string { return fmt.Sprintf("s%d", n) }, func(n int) bool { return n == 2 })
	o := options(newRepo(t), localSandbox(t), fake(t, f), &buffer{})
	o.MaxIterations = 3
	res, err := core.Run(t.Context(), o)
	if exitCode(err) != exitFailure || res == nil || len(res.Iterations) != 2 {
		t.Fatalf("err = %v, result %+v: want iteration 2's failure after 2 iterations", err, res)
	}
	checkSessions(t, home, res.Iterations)
}

// TestFakeSessionsKeptWhenCancelled: the run is cancelled while iteration 2
// runs, with iteration 1's session possibly still being captured; the
// cancelled run still returns both iterations' sessions, captured on the
// host (a capture is not cut short by the cancellation).
func TestFakeSessionsKeptWhenCancelled(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	f := sessionAgent(func(n int) string { return fmt.Sprintf("s%d", n) }, func(int) bool { return false })
	script := f.Script
	f.Script = func(n int) string {
		if n == 2 {
			return script(n) + " && echo 'TEXT ready' && sleep 600"
		}
		return script(n)
	}
	o := options(newRepo(t), localSandbox(t), fake(t, f), &buffer{})
	o.MaxIterations = 3
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	o.OnEvent = func(e core.AgentEvent) {
		if e.Iteration == 2 && e.Event.Text == "ready" {
			cancel()
		}
	}
	res, err := core.Run(ctx, o)
	if exitCode(err) != exitCancelled || !errors.Is(err, context.Canceled) || res == nil || len(res.Iterations) != 2 {
		t.Fatalf("err = %v, result %+v: want the cancellation during iteration 2", err, res)
	}
	checkSessions(t, home, res.Iterations)
}
