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
	all := initFlagsFor("blank", "claude", "docker", "github-issues")
	for _, flag := range []string{"--agent", "--sandbox", "--issue-tracker", "--template", "--create-label", "--build-image"} {
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
	if r.code != 2 || !strings.Contains(r.stderr, filepath.Join(dir, ".sanddune")+" already exists") {
		t.Fatalf("exit %d, want 2 naming the directory:\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(custom); string(b) != "FROM my-own\n" {
		t.Fatalf("the existing Dockerfile was changed: %q", b)
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
		} {
			t.Run(tmpl+"/"+c.backlog, func(t *testing.T) {
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
		for _, k := range []string{"ANTHROPIC_", "CLAUDE_CODE_", "OPENAI_", "CODEX_"} {
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
	const down = "\x1b[B"
	s.expect("Agent")
	s.send("\r") // claude, the first
	s.expect("Model")
	s.send("\r") // its default model
	s.expect("Sandbox")
	s.send(down + "\r") // podman
	s.expect("Backlog manager")
	s.send(down + "\r") // beads
	s.expect("Template")
	s.send(down + "\r") // simple-loop
	s.expect("Build the image")
	s.send("n")
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
