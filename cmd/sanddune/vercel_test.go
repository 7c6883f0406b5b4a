package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/plugins/vercel/vercelfake"
)

// The vercel sandbox end to end: the real sanddune binary and its vercel
// plugin against the fake Vercel API (vercelfake), whose commands really
// run, so git bundles really go in and out.

// fakeVercel starts the fake API and returns it with the env that points
// sanddune at it.
func fakeVercel(t *testing.T) (*vercelfake.Server, []string) {
	t.Helper()
	kittest.RequireEngine(t, "bubblewrap (the fake Vercel API runs commands with it)", vercelfake.Available())
	srv, err := vercelfake.New(vercelfake.Options{Token: "tok-e2e", TeamID: "team_e2e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, []string{"VERCEL_TOKEN=tok-e2e", "VERCEL_TEAM_ID=team_e2e", "VERCEL_PROJECT_ID=prj_e2e",
		"VERCEL_OIDC_TOKEN=", "SANDDUNE_VERCEL_BASE_URL=" + srv.URL}
}

func runEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := sandduneCmd(dir, args...)
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// vercelAgent reads the prompt from stdin, commits it with a fixed author
// date (so the SHA is the agent's own), prints the commit's SHA, leaves an
// uncommitted file and signals completion.
const vercelAgent = `["sh", "-c", "cat > prompt.txt && git add prompt.txt && GIT_AUTHOR_DATE='2001-02-03T04:05:06Z' GIT_COMMITTER_DATE='2001-02-03T04:05:06Z' git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: save prompt' && echo sha=$(git rev-parse HEAD) && echo wip > wip.txt && echo '<promise>COMPLETE</promise>'"]`

type runDoc struct {
	Runs []struct {
		Branch    string
		Commits   []struct{ SHA string }
		Stdout    string
		PatchPath *string `json:"patch_path"`
		Error     *jsonError
	}
}

func TestVercelRunAgainstFakeAPILandsAgentCommits(t *testing.T) {
	t.Parallel()
	for name, strategy := range map[string]string{
		"Branch":      `{ type = "branch", branch = "agent/vercel" }`,
		"MergeToHead": `{ type = "merge-to-head" }`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each its own fake API: the injected 429's Retry-After second overlaps
			srv, env := fakeVercel(t)
			dir := gitRepo(t)
			writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "vercel" "vm" {
  vcpus   = 2
  timeout = "10m"
  env     = { FROM_BLOCK = "yes" }
}
agent "command" "script" {
  command = `+vercelAgent+`
}
run "remote" {
  prompt          = "hello from the host"
  branch_strategy = `+strategy+`
}
`)
			// Injected rate limits and server errors are retried.
			srv.Inject(vercelfake.Fault{Route: vercelfake.RouteCreate, Status: 429, RetryAfter: "1"})
			srv.Inject(vercelfake.Fault{Route: vercelfake.RouteWrite, Status: 503})
			srv.Inject(vercelfake.Fault{Route: vercelfake.RouteCmdLogs, Status: 500})
			r := runEnv(t, dir, env, "run", "--json")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			var doc runDoc
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Runs) != 1 {
				t.Fatalf("stdout: %v\n%s", err, r.stdout)
			}
			res := doc.Runs[0]
			i := strings.Index(res.Stdout, "sha=")
			if i < 0 || len(res.Commits) != 1 {
				t.Fatalf("run result %+v", res)
			}
			agentSHA := strings.Fields(res.Stdout[i+4:])[0]
			branch := res.Branch
			if strings.Contains(strategy, "merge-to-head") {
				branch = "main"
			}
			if got := gitOut(t, dir, "rev-parse", branch); got != agentSHA || res.Commits[0].SHA != agentSHA {
				t.Errorf("%s is at %s, result commit %s; want the agent's own commit %s", branch, got, res.Commits[0].SHA, agentSHA)
			}
			if got := gitOut(t, dir, "show", agentSHA+":prompt.txt"); got != "hello from the host" {
				t.Errorf("prompt.txt = %q: the prompt did not reach the agent's stdin", got)
			}
			if res.PatchPath == nil {
				t.Fatalf("no patch for the uncommitted wip.txt: %+v", res)
			}
			if data, err := os.ReadFile(*res.PatchPath); err != nil || !strings.Contains(string(data), "+++ b/wip.txt") {
				t.Errorf("patch %s: %v\n%s", *res.PatchPath, err, data)
			}
			if len(srv.Sandboxes()) != 0 || srv.RunningSessions() != 0 {
				t.Errorf("sandboxes left after the run: %v", srv.Sandboxes())
			}
			retried := map[vercelfake.Route]int{}
			for _, req := range srv.Requests() {
				if req.Status == 429 || req.Status >= 500 {
					retried[req.Route]++
				}
				if req.TeamID != "team_e2e" {
					t.Errorf("%s %s without the team id", req.Method, req.Path)
				}
				if req.Route == vercelfake.RouteCreate && req.Status == 200 && !strings.Contains(string(req.Body), `"persistent":false`) {
					t.Errorf("create without persistent:false: %s", req.Body)
				}
			}
			for _, r := range []vercelfake.Route{vercelfake.RouteCreate, vercelfake.RouteWrite, vercelfake.RouteCmdLogs} {
				if retried[r] != 1 {
					t.Errorf("%s: %d failed attempts, want the one injected (then retried)", r, retried[r])
				}
			}
		})
	}
}

// TestVercelDroppedLogStreamAgainstFakeAPIKeepsWork: the log stream of the
// agent breaks off after the agent committed; the run fails saying so, and
// the commit is still synced out onto the branch.
func TestVercelDroppedLogStreamAgainstFakeAPIKeepsWork(t *testing.T) {
	srv, env := fakeVercel(t)
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "vercel" "vm" {}
agent "command" "script" {
  command = ["sh", "-c", "echo work > work.txt && git add work.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: work' && echo committed && sleep 30 && echo late"]
}
run "dropped" {
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "agent/dropped" }
}
`)
	srv.Inject(vercelfake.Fault{Route: vercelfake.RouteCmdLogs, Command: "agent: work", DropAfterLines: 1})
	r := runEnv(t, dir, env, "run", "--json")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "log stream broke off") {
		t.Fatalf("exit %d, want 1 with the broken stream named\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := gitOut(t, dir, "log", "-1", "--format=%s", "agent/dropped"); got != "agent: work" {
		t.Errorf("agent/dropped is at %q, want the agent's commit kept", got)
	}
	if len(srv.Sandboxes()) != 0 {
		t.Errorf("sandboxes left: %v", srv.Sandboxes())
	}
}

// vercelOrphanConfig is a vercel block at baseURL and a run whose agent
// commits, leaves an uncommitted file and hangs.
func vercelOrphanConfig(baseURL string) string {
	return `sandbox "vercel" "vm" {
  base_url = "` + baseURL + `"
}
agent "command" "hang" {
  command = ["sh", "-c", "echo work > work.txt && git add work.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'agent: work' && echo wip > wip.txt && echo started && exec sleep 1000"]
}
run "orphan" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/orphan" }
  logging {
    type = "stdout"
  }
}
`
}

// customBaseURL is fakeVercel serving the block's base_url, with the
// default API (SANDDUNE_VERCEL_BASE_URL) a second, empty fake: what the
// defaults find is not what the block made.
func customBaseURL(t *testing.T) (*vercelfake.Server, []string) {
	t.Helper()
	srv, env := fakeVercel(t)
	def, _ := fakeVercel(t)
	for i, kv := range env {
		if strings.HasPrefix(kv, "SANDDUNE_VERCEL_BASE_URL=") {
			env[i] = "SANDDUNE_VERCEL_BASE_URL=" + def.URL
		}
	}
	return srv, env
}

// checkSalvaged checks that gc's output r says it salvaged the killed
// run's sandbox, that its commit is on agent/orphan, its uncommitted file
// in a patch, and that the sandbox is gone from srv.
func checkSalvaged(t *testing.T, dir, base string, srv *vercelfake.Server, r result) {
	t.Helper()
	if r.code != 0 || !strings.Contains(r.stdout, "salvaged from sanddune-") || !strings.Contains(r.stdout, "(run orphan, sandbox.vercel.vm)") {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := gitOut(t, dir, "log", "--format=%s%x09%an", base+"..agent/orphan"); got != "agent: work\tagent" {
		t.Errorf("agent/orphan holds %q beyond the base, want the agent's commit", got)
	}
	patches, _ := filepath.Glob(filepath.Join(dir, ".sanddune", "patches", "orphan-*.patch"))
	if len(patches) != 1 {
		t.Fatalf("patches %v\n%s", patches, r.stdout)
	}
	if data, _ := os.ReadFile(patches[0]); !strings.Contains(string(data), "+++ b/wip.txt") {
		t.Errorf("the patch does not hold wip.txt:\n%s", data)
	}
	if got := srv.Sandboxes(); len(got) != 0 {
		t.Errorf("gc left the salvaged sandbox: %v", got)
	}
}

// TestVercelKilledRunAgainstFakeAPIIsSalvagedByGC kills sanddune outright
// while the agent in a vercel sandbox at the block's base_url has
// committed and left an uncommitted file; `sanddune gc` reads the block
// from the default config file, brings the commit onto the run's branch,
// the file as a patch, and deletes the sandbox.
func TestVercelKilledRunAgainstFakeAPIIsSalvagedByGC(t *testing.T) {
	srv, env := customBaseURL(t)
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), vercelOrphanConfig(srv.URL))
	base := gitOut(t, dir, "rev-parse", "main")
	signalWhenStarted(t, dir, syscall.SIGKILL, env...)
	if n := len(srv.Sandboxes()); n != 1 {
		t.Fatalf("want the killed run's sandbox left, found %d", n)
	}
	checkSalvaged(t, dir, base, srv, runEnv(t, dir, env, "gc"))
}

// TestVercelGCReadsTheConfigFileOfC: the run's config is not the default
// file; gc without -c looks with the defaults only and finds nothing (it
// says so with --dry-run), gc -c FILE salvages the run.
func TestVercelGCReadsTheConfigFileOfC(t *testing.T) {
	srv, env := customBaseURL(t)
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, "ci/vercel.hcl"), vercelOrphanConfig(srv.URL))
	base := gitOut(t, dir, "rev-parse", "main")
	signalRunWhenStarted(t, dir, syscall.SIGKILL, []string{"run", "-c", "ci/vercel.hcl"}, env...)
	if n := len(srv.Sandboxes()); n != 1 {
		t.Fatalf("want the killed run's sandbox left, found %d", n)
	}

	r := runEnv(t, dir, env, "gc", "--dry-run")
	if r.code != 0 || strings.Contains(r.stdout, "salvage") || !strings.Contains(r.stdout, "vercel (defaults)") || strings.Contains(r.stdout, "sandbox.vercel.vm") ||
		!strings.Contains(r.stderr, "no config file .sanddune/sanddune.hcl") {
		t.Fatalf("gc --dry-run without -c: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runEnv(t, dir, env, "gc", "--dry-run", "-c", "ci/vercel.hcl")
	if r.code != 0 || !strings.Contains(r.stdout, "would salvage from sanddune-") ||
		!strings.Contains(r.stdout, "looked at: sandbox.vercel.vm (vercel, from ci/vercel.hcl), ") {
		t.Fatalf("gc --dry-run -c: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	checkSalvaged(t, dir, base, srv, runEnv(t, dir, env, "gc", "-c", "ci/vercel.hcl"))
}

// TestGCSaysWhichBlockItCannotReach: a sandbox block whose API refuses
// the credentials is named on stderr, and gc exits 1; a config file that
// does not load is a warning, and gc goes on with the defaults.
func TestGCSaysWhichBlockItCannotReach(t *testing.T) {
	t.Parallel()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"code":"forbidden","message":"no"}}`, http.StatusForbidden)
	}))
	defer refuse.Close()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "vercel" "far" {
  base_url = "`+refuse.URL+`"
}
`)
	env := []string{"VERCEL_TOKEN=tok", "VERCEL_TEAM_ID=team", "VERCEL_PROJECT_ID=prj", "VERCEL_OIDC_TOKEN=", "SANDDUNE_VERCEL_BASE_URL=" + refuse.URL + "/default"}
	r := runEnv(t, dir, env, "gc")
	if r.code != 1 || !strings.Contains(r.stderr, "sandbox sandbox.vercel.far (vercel): listing resources:") {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "vercel" {`)
	r = runEnv(t, dir, []string{"VERCEL_TOKEN=", "VERCEL_OIDC_TOKEN="}, "gc", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stderr, ".sanddune/sanddune.hcl has errors") || !strings.Contains(r.stderr, "looking with each sandbox plugin's defaults only") ||
		!strings.Contains(r.stdout, "vercel (defaults)") {
		t.Fatalf("gc with a broken config: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestVercelInterruptAgainstFakeAPILeavesNoSandbox: SIGTERM during a run
// kills the agent's remote command, deletes the sandbox, exits 130 and
// keeps the agent's commit.
func TestVercelInterruptAgainstFakeAPILeavesNoSandbox(t *testing.T) {
	srv, env := fakeVercel(t)
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "vercel" "vm" {}
`+hangAgent+`run "hang" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/hang" }
  logging {
    type = "stdout"
  }
}
`)
	code, stderr := signalWhenStarted(t, dir, syscall.SIGTERM, env...)
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	if got := srv.Sandboxes(); len(got) != 0 || srv.RunningSessions() != 0 {
		t.Errorf("sandboxes left behind: %v", got)
	}
	killed := false
	for _, r := range srv.Requests() {
		killed = killed || r.Route == vercelfake.RouteCmdKill && r.Status == 200
	}
	if !killed {
		t.Error("the agent's command was never killed through the API")
	}
	if got := gitOut(t, dir, "show", "agent/hang:work.txt"); got != "work" {
		t.Errorf("the agent's commit was lost: %q", got)
	}
}
