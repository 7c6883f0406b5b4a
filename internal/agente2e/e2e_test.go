//go:build agentse2e

package agente2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The tests drive the real sanddune binary and its plugins, built into a
// temp dir as make install lays them out, with the real agent CLIs from
// PATH running in a bubblewrap sandbox. bubblewrap without network =
// "none" shares the host's network namespace, so the CLIs reach the
// scripted servers on the host's 127.0.0.1.
var (
	sanddune  string
	pluginDir string
	// listenHost is where the scripted servers listen: the docker
	// bridge's gateway when docker is there, else 127.0.0.1.
	listenHost = "127.0.0.1"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sanddune-agents-e2e-")
	if err != nil {
		panic(err)
	}
	sanddune = filepath.Join(dir, "bin", "sanddune")
	pluginDir = filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-C", "../..", "-o", filepath.Dir(sanddune)+"/", "./cmd/...").CombinedOutput(); err != nil {
		panic("go build ./cmd/...: " + err.Error() + "\n" + string(out))
	}
	if gw, err := exec.Command("docker", "network", "inspect", "bridge", "--format", "{{(index .IPAM.Config 0).Gateway}}").Output(); err == nil {
		listenHost = strings.TrimSpace(string(gw))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// require fails the test unless bwrap and the CLI are on PATH.
func require(t *testing.T, cli string) {
	t.Helper()
	for _, b := range []string{"bwrap", "git", cli} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s is not on PATH: scripts/agents-e2e.sh installs the pinned CLIs and runs these tests", b)
		}
	}
}

// apiKey is the credential every run gets: the tests check it never shows.
const apiKey = "sk-e2e-5f3c9a1d7b2e4f60a8c1"

// run is one run's --json document (the fields the tests read).
type run struct {
	Branch           *string
	Commits          []struct{ SHA string }
	CompletionSignal *string `json:"completion_signal"`
	Iterations       []struct {
		SessionID *string `json:"session_id"`
		Usage     *struct {
			Input         int64 `json:"input_tokens"`
			CacheCreation int64 `json:"cache_creation_input_tokens"`
			CacheRead     int64 `json:"cache_read_input_tokens"`
			Output        int64 `json:"output_tokens"`
		}
	}
	Output any
	Error  *struct{ Kind, Message string }
}

type outcome struct {
	run
	code           int
	stdout, stderr string
	logs           string // the files sanddune wrote: run logs, sessions
}

// agentCase is one CLI's agent block and key variable.
type agentCase struct {
	cli, keyVar string
	// block returns the agent block for a server's URL.
	block func(url string) string
	// server starts the model API the CLI talks to.
	server func(t testing.TB, s Script) *Server
	// files are put in the sandbox read-only: path (~/...) -> content.
	files map[string]string
	// docker runs it in a docker container (the test image, with the
	// host's node and the CLI's npm install mounted) instead of bubblewrap.
	docker bool
}

// sandduneRun writes the config, runs `sanddune run --json` in repo with
// the CLIs' PATH and returns its outcome.
func sandduneRun(t *testing.T, repo string, c agentCase, url string, extra string, args ...string) outcome {
	t.Helper()
	mounts := cliMount(c.cli)
	for path, content := range c.files {
		host := filepath.Join(t.TempDir(), filepath.Base(path))
		writeFile(t, host, content)
		mounts += fmt.Sprintf("\n  mount {\n    host_path    = %q\n    sandbox_path = %q\n    readonly     = true\n  }\n", host, path)
	}
	sandbox := `sandbox "bubblewrap" "box" {` + mounts + `}`
	if c.docker {
		sandbox = dockerSandbox(t, c.cli, mounts)
	}
	hcl := sandbox + `
` + c.block(url) + `
variable "resume" { default = "" }
variable "iterations" { default = 2 }
run "e2e" {
  prompt          = "Append a line to e2e.txt and commit it. Then answer inside <plan></plan>."
  max_iterations  = var.iterations
  branch_strategy = { type = "branch", branch = "agent/e2e" }
  resume_session  = var.resume
  idle_timeout    = "3m"
` + extra + `}
`
	writeFile(t, filepath.Join(repo, ".sanddune/sanddune.hcl"), hcl)
	// The host home, where sanddune captures sessions: one per test, so a
	// later run resumes what an earlier one captured.
	home := filepath.Join(filepath.Dir(repo), "home")
	cmd := exec.Command(sanddune, append([]string{"run", "--json"}, args...)...)
	cmd.Dir = repo
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
		"SANDDUNE_PLUGIN_PATH=" + pluginDir, "XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), c.keyVar + "=" + apiKey,
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	o := outcome{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	var doc struct{ Runs []run }
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("exit %d, stdout is not a one-run JSON document (%v):\n%s\nstderr:\n%s", o.code, err, o.stdout, o.stderr)
	}
	o.run = doc.Runs[0]
	// Every file sanddune wrote: run logs, session copies.
	for _, dir := range []string{home, filepath.Join(repo, ".sanddune")} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, err := os.ReadFile(p); err == nil {
					o.logs += string(b)
				}
			}
			return nil
		})
	}
	if !strings.Contains(o.logs, "iteration") {
		t.Fatalf("no run log read:\n%v", o)
	}
	return o
}

// dockerSandbox is a docker sandbox block of the test image running cli:
// the host's node (self-contained but for libc and libstdc++, which the
// image has) and the CLI's npm install are mounted read-only.
func dockerSandbox(t *testing.T, cli, mounts string) string {
	t.Helper()
	p, err := exec.LookPath(cli)
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	return fmt.Sprintf(`sandbox "docker" "box" {
  image = %q
  env   = { PATH = "%s:/opt/e2e-node:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
  mount {
    host_path    = %q
    sandbox_path = "/opt/e2e-node/node"
    readonly     = true
  }%s}`, dockerImage, filepath.Dir(p), node, mounts)
}

// dockerImage is the local image scripts/ci-setup.sh builds.
const dockerImage = "sanddune-test-base:bookworm"

// cliMount binds the npm install of the CLI into the sandbox when it sits
// where the sandbox sees its own dir instead (the host's /tmp).
func cliMount(cli string) string {
	p, err := exec.LookPath(cli)
	if err != nil || filepath.Base(filepath.Dir(p)) != ".bin" {
		return ""
	}
	modules, err := filepath.Abs(filepath.Dir(filepath.Dir(p)))
	if err != nil || filepath.Base(modules) != "node_modules" {
		return ""
	}
	return fmt.Sprintf(`
  mount {
    host_path    = %q
    sandbox_path = %q
    readonly     = true
  }
`, modules, modules)
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		git(t, dir, args...)
	}
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (o outcome) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
}

// checkCommitRun: the agent's tool call committed on the run's branch, the
// run saw the completion signal in its first iteration, with a session id
// and the iteration's own usage (two scripted model calls).
func checkCommitRun(t *testing.T, repo string, o outcome, s *Server) {
	t.Helper()
	if o.code != 0 || o.Error != nil {
		t.Fatalf("run failed: %v\nmodel requests: %v", o, s.Requests())
	}
	if o.CompletionSignal == nil || *o.CompletionSignal != "<promise>COMPLETE</promise>" || len(o.Iterations) != 1 {
		t.Fatalf("want the signal in iteration 1 of 1: %v", o)
	}
	if log := git(t, repo, "log", "--format=%s", "main..agent/e2e"); log != "e2e: agent commit" || len(o.Commits) != 1 {
		t.Fatalf("commits on agent/e2e: %q, reported %d; want the agent's one\n%v", log, len(o.Commits), o)
	}
	if got := git(t, repo, "show", "agent/e2e:e2e.txt"); !strings.HasSuffix(got, "e2e") {
		t.Fatalf("e2e.txt on agent/e2e = %q", got)
	}
	it := o.Iterations[0]
	if it.SessionID == nil || *it.SessionID == "" {
		t.Fatalf("no session id: %v", o)
	}
	u := it.Usage
	if u == nil || u.Input+u.CacheRead+u.CacheCreation != 2*CallInput || u.Output != 2*CallOutput {
		t.Fatalf("usage %+v, want two calls' %d input (cached included) and %d output tokens\n%v", u, 2*CallInput, 2*CallOutput, o)
	}
	checkNoKey(t, o)
	t.Logf("model requests: %v", s.Requests())
}

func checkNoKey(t *testing.T, o outcome) {
	t.Helper()
	if strings.Contains(o.stdout+o.stderr+o.logs, apiKey) {
		t.Fatalf("the API key shows in sanddune's output or files:\n%v", o)
	}
}

// checkUnauthorized: a 401 fails the run with the model's message.
func checkUnauthorized(t *testing.T, o outcome) {
	t.Helper()
	if o.code == 0 || o.Error == nil || !strings.Contains(o.Error.Message, ErrorMessage) {
		t.Fatalf("want a failed run carrying %q: %v", ErrorMessage, o)
	}
	checkNoKey(t, o)
}

// checkNoSignal: a run whose agent never signals runs max_iterations and
// ends without a signal.
func checkNoSignal(t *testing.T, repo string, o outcome) {
	t.Helper()
	if o.CompletionSignal != nil || len(o.Iterations) != 2 {
		t.Fatalf("want 2 iterations and no signal: %v", o)
	}
	if n := git(t, repo, "rev-list", "--count", "main..agent/e2e"); n != "2" {
		t.Fatalf("%s commits on agent/e2e, want one per iteration", n)
	}
	checkNoKey(t, o)
}

func testAgent(t *testing.T, c agentCase) {
	require(t, c.cli)
	t.Run("commit", func(t *testing.T) {
		repo := gitRepo(t)
		s := c.server(t, Commit)
		checkCommitRun(t, repo, sandduneRun(t, repo, c, s.URL, ""), s)
	})
	t.Run("401", func(t *testing.T) {
		repo := gitRepo(t)
		s := c.server(t, Unauthorized)
		checkUnauthorized(t, sandduneRun(t, repo, c, s.URL, ""))
	})
	t.Run("no signal", func(t *testing.T) {
		repo := gitRepo(t)
		s := c.server(t, NoSignal)
		checkNoSignal(t, repo, sandduneRun(t, repo, c, s.URL, ""))
	})
	t.Run("structured output", func(t *testing.T) {
		repo := gitRepo(t)
		s := c.server(t, Output)
		o := sandduneRun(t, repo, c, s.URL, `  output {
    tag    = "plan"
    schema = { type = "object", required = ["steps"], properties = { steps = { type = "integer" } } }
  }
`, "--var", "iterations=1")
		checkCommitRun(t, repo, o, s)
		if got, _ := json.Marshal(o.Output); string(got) != `{"steps":1}` {
			t.Fatalf("output %s, want the final text's <plan>: %v", got, o)
		}
	})
}

var claude = agentCase{cli: "claude", keyVar: "ANTHROPIC_API_KEY", server: Anthropic, block: func(url string) string {
	return `agent "claude" "e2e" {
  model    = "claude-sonnet-4-5"
  base_url = "` + url + `"
  env = {
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
    DISABLE_AUTOUPDATER                      = "1"
    DISABLE_TELEMETRY                        = "1"
    # Claude Code retries a 401 with backoff for minutes otherwise.
    CLAUDE_CODE_MAX_RETRIES = "0"
  }
}`
}}

func TestClaude(t *testing.T) { testAgent(t, claude) }

var codex = agentCase{cli: "codex", keyVar: "OPENAI_API_KEY", server: OpenAIResponses, block: func(url string) string {
	return `agent "codex" "e2e" {
  model    = "gpt-5.4"
  base_url = "` + url + `/v1"
}`
},
	// Codex syncs its curated plugin marketplace from github.com otherwise.
	files: map[string]string{"~/.codex/config.toml": "[features]\nplugins = false\n"},
}

func TestCodex(t *testing.T) {
	testAgent(t, codex)
	// A resumed thread: Codex reports the thread's running total; the
	// iteration reports its own two calls.
	t.Run("resume", func(t *testing.T) {
		repo := gitRepo(t)
		s := OpenAIResponses(t, Commit)
		first := sandduneRun(t, repo, codex, s.URL, "")
		checkCommitRun(t, repo, first, s)
		// The next run starts from main with the first run's commit.
		git(t, repo, "merge", "-q", "--ff-only", "agent/e2e")
		git(t, repo, "branch", "-q", "-D", "agent/e2e")
		o := sandduneRun(t, repo, codex, s.URL, "", "--var", "iterations=1", "--var", "resume="+*first.Iterations[0].SessionID)
		checkCommitRun(t, repo, o, s)
	})
}

// piCase is pi with a model of a provider whose key is keyVar.
func piCase(model, keyVar string, server func(testing.TB, Script) *Server) agentCase {
	return agentCase{cli: "pi", keyVar: keyVar, server: server, block: func(url string) string {
		return `agent "pi" "e2e" {
  model    = "` + model + `"
  base_url = "` + url + `"
  env = {
    PI_OFFLINE   = "1"
    PI_TELEMETRY = "0"
  }
}`
	}}
}

func TestPi(t *testing.T) {
	testAgent(t, piCase("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY", Anthropic))
	// An openai-completions provider.
	t.Run("chat completions", func(t *testing.T) {
		testAgent(t, piCase("deepseek/deepseek-v4-flash", "DEEPSEEK_API_KEY", ChatCompletions))
	})
}

var opencode = agentCase{cli: "opencode", keyVar: "ANTHROPIC_API_KEY", server: Anthropic, block: func(url string) string {
	return `agent "opencode" "e2e" {
  model    = "anthropic/claude-sonnet-4-5"
  base_url = "` + url + `/v1" # the AI SDK's Anthropic base URL ends in /v1
  env = {
    OPENCODE_DISABLE_AUTOUPDATE   = "1"
    OPENCODE_DISABLE_MODELS_FETCH = "1"
  }
}`
}}

func TestOpencode(t *testing.T) { testAgent(t, opencode) }

// TestDocker runs each CLI's commit run in a docker container: the same
// checks as in bubblewrap (commit, signal, session id, usage, no key).
func TestDocker(t *testing.T) {
	if _, err := exec.Command("docker", "image", "inspect", dockerImage).CombinedOutput(); err != nil {
		t.Fatalf("docker or the image %s is not there (scripts/ci-setup.sh builds it): %v", dockerImage, err)
	}
	for _, c := range []agentCase{claude, codex, piCase("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY", Anthropic), opencode, copilot, gemini} {
		t.Run(c.cli, func(t *testing.T) {
			require(t, c.cli)
			c.docker = true
			repo := gitRepo(t)
			s := c.server(t, Commit)
			checkCommitRun(t, repo, sandduneRun(t, repo, c, s.URL, ""), s)
		})
	}
}
