package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// TestValidateEgress: the problems of egress blocks are reported in one
// pass, each once, at the attribute: a malformed entry naming it, a bad
// hosts address, egress on a provider that cannot enforce it (local,
// pointing at the providers that do), egress together with network =
// "none" or with docker's network = "host", and
// an agent endpoint that is no egress entry (a bug of the agent plugin).
func TestValidateEgress(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {
  egress {
    allow = ["api.anthropic.com", "exa mple.com", "10.0.0.0/33"]
    hosts = { "ok.test" = "not-an-ip" }
  }
}
sandbox "bubblewrap" "off" {
  network = "none"
  egress {
    allow = ["github.com"]
    agent = false
  }
}
sandbox "docker" "d" {
  egress { allow = ["github.com"] }
}
sandbox "docker" "h" {
  network = "host"
  egress { allow = ["github.com"] }
}
agent "command" "a" { command = ["true"] }
agent "command" "bad" {
  command   = ["true"]
  endpoints = ["llm.internal:99999"]
}
run "three" {
  sandbox = sandbox.docker.d
  agent   = agent.command.bad
  prompt  = "x"
}
run "one" {
  agent   = agent.command.a
  sandbox = sandbox.local.dev
  prompt  = "x"
  allow_unconfined = true
}
run "two" {
  agent   = agent.command.a
  sandbox = sandbox.bubblewrap.off
  prompt  = "x"
}
run "four" {
  agent   = agent.command.a
  sandbox = sandbox.docker.h
  prompt  = "x"
  branch_strategy = "branch"
}
`)
	r := run(t, dir, "validate")
	for _, want := range []string{
		`sanddune.hcl:3:35: Error: Invalid egress entry`, `egress.allow entry "exa mple.com"`,
		`sanddune.hcl:3:51: Error: Invalid egress entry`, `egress.allow entry "10.0.0.0/33"`,
		`sanddune.hcl:4:27: Error: Invalid egress host`, `"not-an-ip" is not an IP address`,
		`sanddune.hcl:2:3: Error: The sandbox cannot enforce egress`, `sandbox.local.dev's provider (local) does not declare the egress capability`,
		`sanddune.hcl:8:13: Error: egress with network = "none"`,
		`Error: Invalid agent endpoint`, `agent.command.bad declares the endpoint "llm.internal:99999"`,
		`sanddune.hcl:18:13: Error: egress with network = "host"`, `sandbox.docker.h: network "host" shares a network namespace`,
		// A run of a block whose policy is wrong is still checked.
		`sanddune.hcl:46:21: Error: Invalid branch strategy`,
	} {
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("want %q once in the output", want)
		}
	}
	if !strings.Contains(r.stderr, "sanddune plugins list") {
		t.Errorf("the refusal of egress on local does not say where to find providers that enforce it")
	}
	if r.code != 1 || strings.Count(r.stderr, "Error:") != 9 || t.Failed() { // 8 and the closing line
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestValidateEgressBadAgentHidesNoEntry: a wrong value of agent in an
// egress block leaves the block's entries checked in the same pass.
func TestValidateEgressBadAgentHidesNoEntry(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "docker" "d" {
  egress {
    allow = ["http://x.test", "ok.test"]
    agent = "yes"
  }
}
agent "command" "a" { command = ["true"] }
run "r" {
  agent   = agent.command.a
  sandbox = sandbox.docker.d
  prompt  = "x"
}
`)
	r := run(t, dir, "validate")
	for _, want := range []string{`sanddune.hcl:4:14: Error: Unsuitable value type`, `sanddune.hcl:3:14: Error: Invalid egress entry`, `a URL: write its host`} {
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("want %q once in the output", want)
		}
	}
	if r.code != 1 || t.Failed() {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestDockerEgressEndToEnd: egressEndToEnd on docker.
func TestDockerEgressEndToEnd(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	egressEndToEnd(t, "docker", fmt.Sprintf("  image = %q\n", testImage()),
		networkGateway(t, "docker", "network", "inspect", "bridge", "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}"), containers)
}

// TestPodmanEgressEndToEnd: egressEndToEnd on podman.
func TestPodmanEgressEndToEnd(t *testing.T) {
	t.Parallel()
	body := requirePodman(t)
	egressEndToEnd(t, "podman", body,
		networkGateway(t, "podman", "network", "inspect", "podman", "--format", "{{range .Subnets}}{{.Gateway}} {{end}}"), podmanContainers)
}

// TestBubblewrapEgressEndToEnd: egressEndToEnd on bubblewrap, whose
// sandboxes share this machine's addresses.
func TestBubblewrapEgressEndToEnd(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	egressEndToEnd(t, "bubblewrap", "", kittest.OtherIPv4(t, ""), bwrapSandboxes)
}

// TestBubblewrapEgressEndToEndUnprivileged: TestBubblewrapEgressEndToEnd
// as an ordinary user (the CLI, its plugins and the enforcer too).
func TestBubblewrapEgressEndToEndUnprivileged(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	kittest.RunAsUser(t, "^TestBubblewrapEgressEndToEnd$", builtEnv+"="+filepath.Dir(filepath.Dir(sanddune)))
}

// bwrapSandboxes lists the bubblewrap sandbox directories of the run in dir.
func bwrapSandboxes(_ *testing.T, dir string) []string {
	var out []string
	labels, _ := filepath.Glob(filepath.Join(os.TempDir(), "sanddune-bwrap-*", "labels.json"))
	for _, l := range labels {
		if b, _ := os.ReadFile(l); bytes.Contains(b, []byte(`"sanddune.repo":"`+dir+`"`)) {
			out = append(out, filepath.Dir(l))
		}
	}
	return out
}

// egressEndToEnd: `sanddune run` with an egress policy on a sandbox of
// plugin (its block's body, gw the address of this machine its sandboxes
// see) and a scripted agent that tries test hosts on this machine by plain
// TCP and by git (a git daemon the test starts): a listed IP:port, a name
// from hosts with its listed port, the agent's declared endpoint, an
// unlisted port of the same host and an unlisted address. Only the listed
// ones get through; the refused ones are in the run's log, its --events
// and its --json count. The agent's endpoint is refused with agent =
// false. A run without a policy reaches every target (else the test would
// prove nothing). containers lists what the runs left.
func egressEndToEnd(t *testing.T, plugin, body, gw string, containers func(*testing.T, string) []string) {
	other := kittest.OtherIPv4(t, gw)
	ipPort, namePort, otherPort, agentPort := kittest.HelloListener(t, "0.0.0.0"), kittest.HelloListener(t, "0.0.0.0"), kittest.HelloListener(t, "0.0.0.0"), kittest.HelloListener(t, "0.0.0.0")
	gitPort := gitDaemon(t)

	dir := gitRepo(t)
	probe := fmt.Sprintf(`cat > /dev/null
try() { if timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1" && head -n1 <&3' "$2" "$3" 2>/dev/null | grep -qx hello; then echo "$1 ok"; else echo "$1 refused"; fi; }
gitls() { if timeout 20 git ls-remote "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 refused"; fi; }
try listed-ip %[1]s %[3]d
try listed-name ok.test %[4]d
try agent-endpoint %[1]s %[6]d
try unlisted-port %[1]s %[5]d
try unlisted-addr %[2]s %[3]d
gitls git-listed-name git://ok.test:%[7]d/r.git
gitls git-unlisted-addr git://%[2]s:%[7]d/r.git
`, gw, other, ipPort, namePort, otherPort, agentPort, gitPort)
	writeFile(t, filepath.Join(dir, "probe.sh"), probe)
	gitOut(t, dir, "add", "probe.sh")
	gitOut(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "probe")
	egress := func(agent bool) string {
		return fmt.Sprintf(`egress {
    allow = ["%s:%d", "ok.test:%d", "ok.test:%d"]
    hosts = { "ok.test" = "%s" }
    agent = %v
  }`, gw, ipPort, namePort, gitPort, gw, agent)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), fmt.Sprintf(`sandbox "%[6]s" "open" {
%[1]s}
sandbox "%[6]s" "with_agent" {
%[1]s  %[2]s
}
sandbox "%[6]s" "without_agent" {
%[1]s  %[3]s
}
agent "command" "probe" {
  command   = ["bash", "probe.sh"]
  endpoints = ["%[4]s:%[5]d"]
}
run "open" {
  sandbox        = sandbox.%[6]s.open
  prompt         = "probe"
  max_iterations = 1
}
run "agent" {
  sandbox        = sandbox.%[6]s.with_agent
  prompt         = "probe"
  max_iterations = 1
}
run "noagent" {
  sandbox        = sandbox.%[6]s.without_agent
  prompt         = "probe"
  max_iterations = 1
}
`, body, egress(true), egress(false), gw, agentPort, plugin))

	// Without a policy ok.test does not resolve: only the others compare.
	open := probeRun(t, dir, "open")
	for _, target := range []string{"listed-ip", "agent-endpoint", "unlisted-port", "unlisted-addr", "git-unlisted-addr"} {
		if open.outcome[target] != "ok" {
			t.Fatalf("without a policy the sandbox does not reach %s (the test proves nothing): %v", target, open.outcome)
		}
	}

	for _, c := range []struct {
		run     string
		agentOK bool
	}{{"agent", true}, {"noagent", false}} {
		r := probeRun(t, dir, c.run)
		t.Logf("run %s: %v; refused %v (--json %d)", c.run, r.outcome, r.denied, r.count)
		want := map[string]string{"listed-ip": "ok", "listed-name": "ok", "git-listed-name": "ok",
			"unlisted-port": "refused", "unlisted-addr": "refused", "git-unlisted-addr": "refused", "agent-endpoint": "refused"}
		refused := []string{fmt.Sprintf("%s:%d", gw, otherPort), fmt.Sprintf("%s:%d", other, ipPort), fmt.Sprintf("%s:%d", other, gitPort)}
		if c.agentOK {
			want["agent-endpoint"] = "ok"
		} else {
			refused = append(refused, fmt.Sprintf("%s:%d", gw, agentPort))
		}
		for k, v := range want {
			if r.outcome[k] != v {
				t.Errorf("run %s: %s %s, want %s (all: %v)", c.run, k, r.outcome[k], v, r.outcome)
			}
		}
		for _, target := range refused {
			if !strings.Contains(r.log, "warning: egress denied: "+target+" (") {
				t.Errorf("run %s: the log lacks the refusal of %s:\n%s", c.run, target, r.log)
			}
			if !slices.Contains(r.denied, target) {
				t.Errorf("run %s: --events lacks the refusal of %s: %v", c.run, target, r.denied)
			}
		}
		for _, d := range r.denied {
			if strings.HasPrefix(d, fmt.Sprintf("%s:%d", gw, ipPort)) || strings.Contains(d, fmt.Sprintf(":%d", namePort)) {
				t.Errorf("run %s: a listed target was reported refused: %s", c.run, d)
			}
		}
		if r.count != len(r.denied) || r.count < len(refused) {
			t.Errorf("run %s: --json egress_denied %d, --events %d refusals %v, want at least %d", c.run, r.count, len(r.denied), r.denied, len(refused))
		}
	}
	if c := containers(t, dir); len(c) != 0 {
		t.Errorf("containers left behind: %v", c)
	}
}

// probed is what a run of the probe agent showed.
type probed struct {
	outcome map[string]string // target -> ok | refused
	log     string
	denied  []string // the --events refusals, host:port
	count   int      // --json egress_denied
}

// probeRun runs one probe run with --json and --events.
func probeRun(t *testing.T, dir, name string) probed {
	t.Helper()
	events := filepath.Join(t.TempDir(), "events.jsonl")
	r := run(t, dir, "run", "--json", "--events", events, name)
	if r.code != 0 {
		t.Fatalf("run %s: exit %d\n%s", name, r.code, r.stderr)
	}
	var doc struct {
		Runs []struct {
			Stdout       string `json:"stdout"`
			LogFile      string `json:"log_file"`
			EgressDenied int    `json:"egress_denied"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("run %s: --json: %v\n%s", name, err, r.stdout)
	}
	p := probed{outcome: map[string]string{}, count: doc.Runs[0].EgressDenied}
	for _, l := range strings.Split(doc.Runs[0].Stdout, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			p.outcome[k] = v
		}
	}
	log, err := os.ReadFile(doc.Runs[0].LogFile)
	if err != nil {
		t.Fatal(err)
	}
	p.log = string(log)
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Type    string
			Payload struct {
				Host  string
				Port  int
				Proto string
			}
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("--events line %q: %v", l, err)
		}
		if e.Type == "egress_denied" {
			p.denied = append(p.denied, fmt.Sprintf("%s:%d", e.Payload.Host, e.Payload.Port))
		}
	}
	return p
}

// networkGateway is the IPv4 gateway an engine's inspect command prints:
// the address of this machine its containers see.
func networkGateway(t *testing.T, engine string, args ...string) string {
	t.Helper()
	out, err := exec.Command(engine, args...).Output()
	for _, f := range strings.Fields(string(out)) {
		if ip := net.ParseIP(f); ip != nil && ip.To4() != nil {
			return f
		}
	}
	t.Fatalf("%s %v: no IPv4 gateway: %v %q", engine, args, err, out)
	return ""
}

// gitDaemon serves a bare repository r.git over git:// on every address of
// this host until the test ends, and returns its port.
func gitDaemon(t *testing.T) int {
	t.Helper()
	base := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(base, "r.git")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	seed := gitRepo(t)
	gitOut(t, seed, "push", "-q", filepath.Join(base, "r.git"), "main")
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--base-path="+base, "--listen=0.0.0.0", fmt.Sprintf("--port=%d", port), base)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // git runs git-daemon as its child: stop both
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	for i := 0; i < 100; i++ { // until it listens
		if out, err := exec.Command("git", "ls-remote", fmt.Sprintf("git://127.0.0.1:%d/r.git", port)).CombinedOutput(); err == nil && len(out) > 0 {
			return port
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("git daemon on port %d does not answer", port)
	return 0
}

// TestDryRunShowsTheEgressPolicy: the plan shows each run's policy as the
// sandbox will get it: the block's entries and hosts, with the agent's
// endpoints unless agent = false.
func TestDryRunShowsTheEgressPolicy(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "docker" "with" {
  egress {
    allow = ["github.com:443"]
    hosts = { "ok.test" = "10.0.0.1" }
  }
}
sandbox "docker" "without" {
  egress {
    allow = ["github.com:443"]
    agent = false
  }
}
agent "command" "a" {
  command   = ["true"]
  endpoints = ["llm.internal:8080"]
}
run "with" {
  sandbox = sandbox.docker.with
  prompt  = "x"
}
run "without" {
  sandbox = sandbox.docker.without
  prompt  = "x"
}
`)
	r := run(t, dir, "run", "--dry-run", "--json")
	var doc struct {
		Runs []struct {
			Name   string
			Egress *struct {
				Allow []string
				Hosts map[string]string
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || len(doc.Runs) != 2 {
		t.Fatalf("exit %d, %v:\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if e := doc.Runs[0].Egress; e == nil || !slices.Equal(e.Allow, []string{"github.com:443", "llm.internal:8080"}) || e.Hosts["ok.test"] != "10.0.0.1" {
		t.Errorf("run with: egress %+v", e)
	}
	if e := doc.Runs[1].Egress; e == nil || !slices.Equal(e.Allow, []string{"github.com:443"}) {
		t.Errorf("run without: egress %+v", e)
	}
	r = run(t, dir, "run", "--dry-run", "with")
	if !strings.Contains(r.stdout, "  egress:    allows github.com:443, llm.internal:8080 (hosts: ok.test = 10.0.0.1)") {
		t.Errorf("the plan does not show the policy:\n%s%s", r.stdout, r.stderr)
	}
}
