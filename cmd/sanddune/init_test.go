package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/cmd/sanddune/internal/templates"
)

// initFlagsFor are init flags answering every question.
func initFlagsFor(template, agent, sandbox, backlog string, extra ...string) []string {
	return append([]string{"init", "--template", template, "--agent", agent, "--sandbox", sandbox,
		"--issue-tracker", backlog, "--create-label=false", "--build-image=false"}, extra...)
}

func TestInitWithoutATerminalNamesTheMissingFlag(t *testing.T) {
	t.Parallel()
	all := initFlagsFor("simple-loop", "claude", "docker", "github-issues")
	for _, flag := range []string{"--agent", "--sandbox", "--issue-tracker", "--template"} {
		t.Run(flag, func(t *testing.T) {
			t.Parallel()
			var args []string
			for i := 0; i < len(all); i++ {
				switch {
				case all[i] == flag:
					i++ // and its value
				case strings.HasPrefix(all[i], flag+"="):
				default:
					args = append(args, all[i])
				}
			}
			dir := gitRepo(t)
			r := run(t, dir, args...) // stdin is /dev/null
			if r.code != 2 || !strings.Contains(r.stderr, flag+" is required when stdin is not a terminal") {
				t.Fatalf("exit %d, want 2 naming %s:\n%s", r.code, flag, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, ".sanddune")); !os.IsNotExist(err) {
				t.Fatalf(".sanddune/ after a failed init: %v", err)
			}
		})
	}
}

func TestInitRejectsAnUnknownValueListingTheKnownOnes(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	r := run(t, dir, initFlagsFor("parallel", "claude", "docker", "github-issues")...)
	if r.code != 2 || !strings.Contains(r.stderr, `--template "parallel": want one of blank, simple-loop`) {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
}

// TestInitCustomIssueTracker: the custom backlog manager's commands go into
// the prompts; without a terminal a missing one is named, a command without
// <ID> or with a backquote is refused, and the commands' flags go only with
// --issue-tracker custom.
func TestInitCustomIssueTracker(t *testing.T) {
	t.Parallel()
	custom := initFlagsFor("sequential-reviewer", "claude", "docker", "custom")
	cmds := []string{"--list-command", "tracker ls --open", "--view-command", "tracker show <ID>", "--close-command", "tracker done <ID>"}
	t.Run("written", func(t *testing.T) {
		t.Parallel()
		dir := gitRepo(t)
		if r := run(t, dir, append(custom, cmds...)...); r.code != 0 {
			t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		cfg := filepath.Join(dir, ".sanddune")
		prompts := readAll(t, cfg)
		for _, want := range []string{"!`tracker ls --open`", "tracker show", "tracker done"} {
			if !strings.Contains(prompts, want) {
				t.Errorf("the prompts lack %q:\n%s", want, prompts)
			}
		}
		cmd := sandduneCmd(dir, "validate")
		cmd.Env = append(withoutCredentials(cmd.Env), "ANTHROPIC_API_KEY=test-key")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("validate: %v\n%s", err, out)
		}
	})
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing", append(custom, cmds[:2]...), "--view-command, --close-command are required when stdin is not a terminal"},
		{"no id", append(custom, "--list-command", "ls", "--view-command", "tracker show", "--close-command", "x <ID>"), `--view-command "tracker show": put <ID> where the issue's id goes`},
		{"backquote", append(custom, "--list-command", "ls `x`", "--view-command", "v <ID>", "--close-command", "x <ID>"), "one line without backquotes"},
		{"not custom", append(initFlagsFor("simple-loop", "claude", "docker", "beads"), "--list-command", "ls"), "--list-command goes with --issue-tracker custom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := gitRepo(t)
			r := run(t, dir, c.args...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, want 2 saying %q:\n%s", r.code, c.want, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, ".sanddune")); !os.IsNotExist(err) {
				t.Fatalf(".sanddune/ after a failed init: %v", err)
			}
		})
	}
}

func TestInitRefusesAnExistingConfigDir(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	custom := filepath.Join(dir, ".sanddune", "Dockerfile")
	writeFile(t, custom, "FROM my-own\n")
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, sub, initFlagsFor("blank", "claude", "docker", "github-issues")...)
	if r.code != 2 || !strings.Contains(r.stderr, custom+" already exists") || strings.Contains(r.stderr, "remove") {
		t.Fatalf("exit %d, want 2 naming the file, without advice to remove anything:\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(custom); string(b) != "FROM my-own\n" {
		t.Fatalf("the existing Dockerfile was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sanddune", "sanddune.hcl")); err == nil {
		t.Fatal("a refused init left a config behind")
	}
}

// TestInitWritesBesideSanddunesState: a .sanddune holding only what runs
// left there (logs, a preserved worktree) is no reason to refuse, and init
// leaves it as it is.
func TestInitWritesBesideSanddunesState(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	kept := filepath.Join(dir, ".sanddune", "worktrees", "run-1", "work.txt")
	writeFile(t, kept, "uncommitted\n")
	writeFile(t, filepath.Join(dir, ".sanddune", "logs", "run-1.log"), "log\n")
	r := run(t, dir, initFlagsFor("blank", "claude", "docker", "github-issues")...)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(kept); string(b) != "uncommitted\n" {
		t.Fatalf("the preserved worktree's file is %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ".sanddune", "sanddune.hcl")); err != nil {
		t.Fatal(err)
	}
}

// TestEveryTemplatePassesValidate writes each template with each backlog
// manager (docker with claude, podman with codex) and validates it.
func TestEveryTemplatePassesValidate(t *testing.T) {
	t.Parallel()
	for _, tmpl := range templates.TemplateNames() {
		for _, c := range []struct{ agent, sandbox, backlog, credential, image string }{
			{"claude", "docker", "github-issues", "ANTHROPIC_API_KEY", "Dockerfile"},
			{"codex", "podman", "beads", "OPENAI_API_KEY", "Containerfile"},
			{"gemini", "docker", "beads", "GEMINI_API_KEY", "Dockerfile"},
		} {
			t.Run(tmpl+"/"+c.agent, func(t *testing.T) {
				t.Parallel()
				dir := gitRepo(t)
				r := run(t, dir, initFlagsFor(tmpl, c.agent, c.sandbox, c.backlog)...)
				if r.code != 0 {
					t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				cfg := filepath.Join(dir, ".sanddune")
				for _, name := range []string{"sanddune.hcl", c.image, ".env.example", ".gitignore"} {
					if !strings.Contains(r.stdout, filepath.Join(".sanddune", name)) {
						t.Errorf("init does not list %s:\n%s", name, r.stdout)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(cfg, ".gitignore")); string(b) != ".env\nlogs/\nworktrees/\npatches/\n" {
					t.Errorf(".gitignore = %q", b)
				}
				env, _ := os.ReadFile(filepath.Join(cfg, ".env.example"))
				if !strings.Contains(string(env), "\n"+c.credential+"=\n") {
					t.Errorf(".env.example lacks %s=:\n%s", c.credential, env)
				}
				image, _ := os.ReadFile(filepath.Join(cfg, c.image))
				pkg, _ := templates.FindAgent(c.agent)
				for _, want := range []string{"ARG AGENT_UID", "ARG AGENT_GID", "npm install -g " + pkg.Package, " git curl jq gh "} {
					if !strings.Contains(string(image), want) {
						t.Errorf("%s lacks %q", c.image, want)
					}
				}
				// Without the credential, validate says which key to set.
				cmd := sandduneCmd(dir, "validate")
				cmd.Env = append(withoutCredentials(cmd.Env), c.credential+"=test-key")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("validate: %v\n%s\n%s", err, out, readAll(t, cfg))
				}
				if r := run(t, dir, "fmt", "--check", ".sanddune/sanddune.hcl"); r.code != 0 {
					t.Errorf("the template is not in canonical format:\n%s%s", r.stdout, r.stderr)
				}
			})
		}
	}
}

func withoutCredentials(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool {
		for _, k := range []string{"ANTHROPIC_", "CLAUDE_CODE_", "OPENAI_", "CODEX_", "GEMINI_"} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
		return false
	})
}

func readAll(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			c, _ := os.ReadFile(p)
			b.WriteString("== " + p + "\n" + string(c))
		}
		return nil
	})
	return b.String()
}

var (
	fakeBinOnce sync.Once
	fakeBinDir  string
	fakeBinErr  error
)

// fakeBin is a directory holding gh, bd and claude fakes
// (testdata/fakebacklog), static so that they run in any sandbox.
func fakeBin(t *testing.T) string {
	t.Helper()
	fakeBinOnce.Do(func() {
		fakeBinDir = filepath.Join(filepath.Dir(filepath.Dir(sanddune)), "fake")
		bin := filepath.Join(fakeBinDir, "gh")
		cmd := exec.Command("go", "build", "-o", bin, "./testdata/fakebacklog")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fakeBinErr = fmt.Errorf("go build ./testdata/fakebacklog: %v\n%s", err, out)
			return
		}
		for _, name := range []string{"bd", "claude"} {
			if fakeBinErr = os.Link(bin, filepath.Join(fakeBinDir, name)); fakeBinErr != nil {
				return
			}
		}
	})
	if fakeBinErr != nil {
		t.Fatalf("fake CLIs: %v", fakeBinErr)
	}
	return fakeBinDir
}

// backlogDB writes a fake backlog (testdata/fakebacklog) with open issues
// titled titles, labelled label, and returns its path.
func backlogDB(t *testing.T, dir, label string, titles ...string) string {
	t.Helper()
	type issue struct {
		Number int      `json:"number"`
		Title  string   `json:"title"`
		Body   string   `json:"body"`
		State  string   `json:"state"`
		Labels []string `json:"labels"`
	}
	db := struct {
		Issues []issue  `json:"issues"`
		Labels []string `json:"labels"`
	}{Labels: []string{}}
	for i, title := range titles {
		db.Issues = append(db.Issues, issue{Number: i + 1, Title: title, Body: "Do " + title + ".", State: "open", Labels: []string{label}})
	}
	b, _ := json.Marshal(db)
	p := filepath.Join(dir, "backlog.json")
	writeFile(t, p, string(b))
	return p
}

type backlogState struct {
	Issues []struct {
		Number int
		State  string
	}
	Labels []string
}

func readBacklog(t *testing.T, p string) backlogState {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var s backlogState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInitCreatesTheGitHubLabelWithFakeGh(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	db := backlogDB(t, t.TempDir(), "bug")
	cmd := sandduneCmd(dir, "init", "--template", "simple-loop", "--agent", "claude", "--sandbox", "docker",
		"--issue-tracker", "github-issues", "--create-label", "--build-image=false")
	cmd.Env = append(cmd.Env, "PATH="+fakeBin(t)+":"+os.Getenv("PATH"), "FAKE_BACKLOG_DB="+db)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `Created the GitHub label "sanddune"`) {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if s := readBacklog(t, db); !slices.Equal(s.Labels, []string{"sanddune"}) {
		t.Fatalf("labels after init: %v", s.Labels)
	}
	prompt, _ := os.ReadFile(filepath.Join(dir, ".sanddune", "prompt.md"))
	if !strings.Contains(string(prompt), "!`gh issue list --state open --label sanddune ") {
		t.Fatalf("the prompt does not list the labelled issues:\n%s", prompt)
	}
}

func TestInteractiveInitOnATerminal(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	s := startOnPTY(t, dir, nil, "init")
	s.expect("Agent:")
	s.expect("Choose 1-")
	s.send("\r") // claude, the first
	s.expect("Model [claude-opus-4-8]: ")
	s.send("\r") // its default model
	s.expect("Sandbox:")
	s.send("2\r") // podman
	s.expect("Template:")
	s.send("simple-loop\r")      // by name
	s.expect("Backlog manager:") // after the template: blank reads no issues
	s.send("9\r")                // no such choice: asked again
	s.expect("is not one of the choices")
	s.send("2\r") // beads
	s.expect("Build the image")
	s.send("n\r")
	s.expect("Next steps")
	if code := s.wait(); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, s.output())
	}
	cfg := filepath.Join(dir, ".sanddune")
	hcl, _ := os.ReadFile(filepath.Join(cfg, "sanddune.hcl"))
	for _, want := range []string{`sandbox "podman" "default"`, `agent "claude" "default"`, `model = "claude-opus-4-8"`, `run "worker"`} {
		if !strings.Contains(string(hcl), want) {
			t.Errorf("sanddune.hcl lacks %q:\n%s", want, hcl)
		}
	}
	if prompt, _ := os.ReadFile(filepath.Join(cfg, "prompt.md")); !strings.Contains(string(prompt), "!`bd ready --json`") {
		t.Errorf("the prompt does not list beads' issues:\n%s", prompt)
	}
	if _, err := os.Stat(filepath.Join(cfg, "Containerfile")); err != nil {
		t.Errorf("no Containerfile for podman: %v", err)
	}
	if !strings.Contains(s.output(), "sanddune podman build-image") {
		t.Errorf("the next steps do not say how to build the image:\n%s", s.output())
	}
}

// TestInitOnATerminalEndsOnSIGTERM: a signal ends init's form at once,
// writing nothing (the form used to move to its next question).
func TestInitOnATerminalEndsOnSIGTERM(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	s := startOnPTY(t, dir, nil, "init")
	s.expect("Agent")
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(); code != exitCancelled {
		t.Fatalf("exit %d, want %d; the terminal shows:\n%s", code, exitCancelled, s.output())
	}
	s.expect("init cancelled: nothing was written") // the terminal may show it after the exit
	if _, err := os.Stat(filepath.Join(dir, ".sanddune")); !os.IsNotExist(err) {
		t.Fatalf(".sanddune/ after a cancelled init: %v", err)
	}
}

// initForDocker runs init for template and backlog with docker and claude,
// then points the written config at the test image, the fake CLIs (gh, bd
// and a scripted claude running script) and the fake backlog db: the one
// edit a test makes to what init wrote.
func initForDocker(t *testing.T, dir, template, backlog, db, script string) {
	t.Helper()
	r := run(t, dir, initFlagsFor(template, "claude", "docker", backlog, "--image-name", testImage())...)
	if r.code != 0 {
		t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	agentDir := t.TempDir()
	writeFile(t, filepath.Join(agentDir, "agent.sh"), script)
	p := filepath.Join(dir, ".sanddune", "sanddune.hcl")
	b, _ := os.ReadFile(p)
	hcl := strings.Replace(string(b), "\n}\n\nagent ", fmt.Sprintf(`
  env = {
    PATH              = "/fake:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    FAKE_BACKLOG_DB   = "/backlog/%s"
    FAKE_AGENT_SCRIPT = "sh /agent/agent.sh"
  }
  mount {
    host_path    = %q
    sandbox_path = "/fake"
    readonly     = true
  }
  mount {
    host_path    = %q
    sandbox_path = "/agent"
    readonly     = true
  }
  mount {
    host_path    = %q
    sandbox_path = "/backlog"
  }
}

agent `, filepath.Base(db), fakeBin(t), agentDir, filepath.Dir(db)), 1)
	hcl = strings.Replace(hcl, `model = "claude-opus-4-8"`, "model = \"claude-opus-4-8\"\n  capture_sessions = false", 1)
	if hcl == string(b) {
		t.Fatalf("the written config changed shape:\n%s", b)
	}
	writeFile(t, p, hcl)
}

// templateRun is a run's entry in `run --json`.
type templateRun struct {
	Name       string
	Commits    []struct{ SHA string }
	Iterations []json.RawMessage
	Steps      []json.RawMessage
	Error      json.RawMessage
}

// runTemplate runs the config init wrote, with a fake credential.
func runTemplate(t *testing.T, dir string, args ...string) []templateRun {
	t.Helper()
	cmd := sandduneCmd(dir, append([]string{"run", "--json"}, args...)...)
	cmd.Env = append(withoutCredentials(cmd.Env), "ANTHROPIC_API_KEY=fake-test-key")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var doc struct{ Runs []templateRun }
	if jerr := json.Unmarshal([]byte(stdout.String()), &doc); err != nil || jerr != nil {
		t.Fatalf("run: %v %v\n%s\n%s", err, jerr, stdout.String(), stderr.String())
	}
	if left := containers(t, dir); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
	return doc.Runs
}

const gitCommit = `git -c user.name=agent -c user.email=agent@example.com commit -qm`

// TestSimpleLoopTemplateWorksThroughFakeGitHubIssuesInDocker: the
// simple-loop template with the github-issues backlog manager, a fake gh in
// the sandbox and a scripted agent that takes the first issue of the list
// its prompt shows, commits and closes it, until the list is empty.
func TestSimpleLoopTemplateWorksThroughFakeGitHubIssuesInDocker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := gitRepo(t)
	db := backlogDB(t, t.TempDir(), "sanddune", "add a", "add b")
	initForDocker(t, dir, "simple-loop", "github-issues", db, `
n=$(grep -o '"number":[0-9]*' | head -n1 | cut -d: -f2)
if [ -z "$n" ]; then echo '<promise>COMPLETE</promise>'; exit 0; fi
echo "issue $n" > "issue-$n.txt" && git add "issue-$n.txt" && `+gitCommit+` "sanddune: issue $n"
gh issue close "$n" --comment done && echo "closed issue $n"
`)
	runs := runTemplate(t, dir)
	if len(runs) != 1 || string(runs[0].Error) != "null" || len(runs[0].Commits) != 2 || len(runs[0].Iterations) != 3 {
		t.Fatalf("want one run, 2 commits in 3 iterations: %+v", runs)
	}
	if got := gitOut(t, dir, "log", "--format=%s", "-2", "main"); got != "sanddune: issue 2\nsanddune: issue 1" {
		t.Fatalf("main's last commits: %q", got)
	}
	for _, is := range readBacklog(t, db).Issues {
		if is.State != "closed" {
			t.Errorf("issue %d is %s", is.Number, is.State)
		}
	}
}

// TestSequentialReviewerTemplateWorksThroughFakeBeadsInDocker: the
// sequential-reviewer template with beads: the implement step takes the
// first ready issue (bd ready) and closes it (bd close); the review step
// sees its commit in its prompt and commits a refinement; both land.
func TestSequentialReviewerTemplateWorksThroughFakeBeadsInDocker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := gitRepo(t)
	db := backlogDB(t, t.TempDir(), "", "add a", "add b")
	initForDocker(t, dir, "sequential-reviewer", "beads", db, `
p=$(cat)
case "$p" in
*"# Review"*)
  printf '%s' "$p" | grep -q "sanddune: issue bd-1" || { echo "the review prompt lacks the commit" >&2; exit 1; }
  echo reviewed > review.txt && git add review.txt && `+gitCommit+` "sanddune: review" ;;
*)
  id=$(printf '%s' "$p" | grep -o '"id":"bd-[0-9]*"' | head -n1 | cut -d'"' -f4)
  echo "$id" > "$id.txt" && git add "$id.txt" && `+gitCommit+` "sanddune: issue $id" && bd close "$id" --reason done ;;
esac
echo '<promise>COMPLETE</promise>'
`)
	runs := runTemplate(t, dir)
	if len(runs) != 1 || string(runs[0].Error) != "null" || len(runs[0].Steps) != 2 {
		t.Fatalf("want one session of 2 steps: %+v", runs)
	}
	if got := gitOut(t, dir, "log", "--format=%s", "-2", "main"); got != "sanddune: review\nsanddune: issue bd-1" {
		t.Fatalf("main's last commits: %q", got)
	}
	if s := readBacklog(t, db); s.Issues[0].State != "closed" || s.Issues[1].State != "open" {
		t.Fatalf("backlog after one session: %+v", s.Issues)
	}
}

// TestInitBuildImageBuildsWithProgressThroughDocker: --build-image builds
// the written Dockerfile through `sanddune docker build-image`, showing the
// build's progress. Offline (CI) the base image cannot be pulled: init
// then fails, keeps .sanddune/ and says how to build the image later.
func TestInitBuildImageBuildsWithProgressThroughDocker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := gitRepo(t)
	image := "sanddune-init-test:" + strings.ToLower(filepath.Base(dir))
	r := run(t, dir, "init", "--template", "blank", "--agent", "pi", "--sandbox", "docker", "--issue-tracker", "beads",
		"--build-image", "--image-name", image)
	for _, want := range []string{"Building Docker image " + image, "Step 1/", "FROM node:22-bookworm"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in the build's progress:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".sanddune", "Dockerfile")); err != nil {
		t.Fatalf("the Dockerfile is gone: %v", err)
	}
	switch r.code {
	case 0:
		t.Cleanup(func() { exec.Command("docker", "rmi", "-f", image).Run() })
		if out, err := exec.Command("docker", "image", "inspect", image).CombinedOutput(); err != nil {
			t.Fatalf("init succeeded but there is no image %s: %s", image, out)
		}
	case 1:
		if want := "build the image with `sanddune docker build-image --image-name " + image + "`"; !strings.Contains(r.stderr, want) {
			t.Fatalf("the failure does not say %q:\n%s", want, r.stderr)
		}
	default:
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestParallelPlannerTemplatePlansImplementsAndMergesInDocker: init
// --template parallel-planner with github-issues, then a scripted agent
// plans 3 issues (structured output), implements
// each on its own branch in parallel, and the merge run merges the 3
// branches and closes the issues through the fake gh.
func TestParallelPlannerTemplatePlansImplementsAndMergesInDocker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := gitRepo(t)
	db := backlogDB(t, t.TempDir(), "sanddune", "add a", "add b", "add c")
	initForDocker(t, dir, "parallel-planner", "github-issues", db, `
p=$(cat)
case "$p" in
*"<issues-json>"*)
  printf '<plan>{"issues": ['
  sep=
  for n in $(printf '%s' "$p" | grep -o '"number":[0-9]*' | cut -d: -f2); do
    printf '%s{"id": "%s", "title": "issue %s", "branch": "sanddune/issue-%s"}' "$sep" "$n" "$n" "$n"; sep=,
  done
  echo ']}</plan>' ;;
*"You work on issue"*)
  id=$(printf '%s' "$p" | sed -n 's/^You work on issue \([0-9]*\).*/\1/p')
  echo "$id" > "issue-$id.txt" && git add "issue-$id.txt" && `+gitCommit+` "sanddune: issue $id"
  echo '<promise>COMPLETE</promise>' ;;
*"# Merge"*)
  for b in $(printf '%s' "$p" | sed -n 's/^- sanddune\/issue-\([0-9]*\)$/\1/p'); do gh issue close "$b" --comment merged; done
  echo '<promise>COMPLETE</promise>' ;;
*) echo "unexpected prompt: $p" >&2; exit 1 ;;
esac
`)
	runs := runTemplate(t, dir, "planner")
	var implemented int
	for _, r := range runs {
		if string(r.Error) != "null" {
			t.Errorf("run %s failed: %s", r.Name, r.Error)
		}
		if strings.HasPrefix(r.Name, "implement") {
			implemented++
		}
	}
	if implemented != 3 {
		t.Fatalf("want 3 implement runs: %+v", runs)
	}
	for n := 1; n <= 3; n++ {
		branch := fmt.Sprintf("sanddune/issue-%d", n)
		if got := gitOut(t, dir, "log", "-1", "--format=%s", branch); got != fmt.Sprintf("sanddune: issue %d", n) {
			t.Errorf("%s: last commit %q", branch, got)
		}
		if got := gitOut(t, dir, "show", fmt.Sprintf("main:issue-%d.txt", n)); got != fmt.Sprint(n) {
			t.Errorf("main:issue-%d.txt = %q: the branch is not merged", n, got)
		}
	}
	for _, is := range readBacklog(t, db).Issues {
		if is.State != "closed" {
			t.Errorf("issue %d is %s after the merge", is.Number, is.State)
		}
	}
}
