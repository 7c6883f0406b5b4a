package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// expectWait bounds each expected step; it only ends a hung test, it
// measures nothing.
const expectWait = 3 * time.Minute

// tuiAgent is a scripted TUI: it commits a file, asks for a name on its
// terminal, answers it, and then ends as $TUI_END says (exit 0, or a crash).
const tuiAgent = `["sh", "-c", "git -c user.name=agent -c user.email=agent@example.com commit -q --allow-empty -m 'tui: started' && printf 'name? ' && read n && echo \"hello $n\" > tui.txt && git add tui.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm \"tui: $n\" && echo \"answered: hello $n\" && eval \"$TUI_END\""]`

// ptySession is sanddune running on a pseudo-terminal the test drives.
type ptySession struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	before *unix.Termios

	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startOnPTY(t *testing.T, dir string, env []string, args ...string) *ptySession {
	t.Helper()
	cmd := sandduneCmd(dir, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Env = append(cmd.Env, "TERM=xterm-256color")
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	// tcgetattr on the master reads the terminal's (the slave's) settings.
	before, err := unix.IoctlGetTermios(int(master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	s := &ptySession{t: t, cmd: cmd, master: master, before: before, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
		master.Close()
	})
	return s
}

func (s *ptySession) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// expect waits until the output contains want.
func (s *ptySession) expect(want string) {
	s.t.Helper()
	deadline := time.Now().Add(expectWait)
	for !strings.Contains(s.output(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("no %q on the terminal; it shows:\n%s", want, s.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *ptySession) send(text string) {
	s.t.Helper()
	if _, err := s.master.Write([]byte(text)); err != nil {
		s.t.Fatal(err)
	}
}

// wait returns sanddune's exit code once it exited, after checking that
// it left the terminal as it found it (not in raw mode).
func (s *ptySession) wait() int {
	s.t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- s.cmd.Wait() }()
	var err error
	select {
	case err = <-errc:
	case <-time.After(expectWait):
		s.t.Fatalf("sanddune did not exit; the terminal shows:\n%s", s.output())
	}
	after, terr := unix.IoctlGetTermios(int(s.master.Fd()), unix.TCGETS)
	if terr != nil {
		s.t.Fatal(terr)
	}
	if after.Lflag != s.before.Lflag || after.Iflag != s.before.Iflag || after.Oflag != s.before.Oflag {
		s.t.Errorf("the terminal was not restored: lflag %#x iflag %#x oflag %#x, was %#x %#x %#x",
			after.Lflag, after.Iflag, after.Oflag, s.before.Lflag, s.before.Iflag, s.before.Oflag)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return 0
}

// interactiveConfig writes a config with the scripted TUI agent and one
// run; sandbox is a sandbox block, or `sandbox = "none"`.
func interactiveConfig(t *testing.T, dir, sandbox string) {
	t.Helper()
	block, attr := sandbox, ""
	if strings.HasPrefix(sandbox, "sandbox =") {
		block, attr = "", sandbox
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), block+`
agent "command" "tui" {
  command = `+tuiAgent+`
}
run "tui" {
  `+attr+`
  prompt = "hi"
}
`)
}

// testInteractive types a line into the scripted TUI and checks the answer,
// the commits on the branch and the restored terminal.
func testInteractive(t *testing.T, dir string) {
	s := startOnPTY(t, dir, []string{"TUI_END=exit 0"}, "interactive", "tui")
	s.expect("name? ")
	s.send("world\r")
	s.expect("answered: hello world")
	if code := s.wait(); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, s.output())
	}
	s.expect("2 commit(s) on main")
	if got := gitOut(t, dir, "log", "--format=%s", "-2"); got != "tui: world\ntui: started" {
		t.Fatalf("commits on main: %q", got)
	}
	if got := gitOut(t, dir, "show", "HEAD:tui.txt"); got != "hello world" {
		t.Fatalf("tui.txt: %q", got)
	}
}

// TestInteractiveOnTheHost runs the TUI without a sandbox (sandbox =
// "none"), on a host pseudo-terminal, in the repository.
func TestInteractiveOnTheHost(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	interactiveConfig(t, dir, `sandbox = "none"`)
	testInteractive(t, dir)
}

func TestInteractiveInDocker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := gitRepo(t)
	interactiveConfig(t, dir, `sandbox "docker" "d" {
  image = "`+testImage()+`"
}`)
	testInteractive(t, dir)
	if c := containers(t, dir); len(c) != 0 {
		t.Fatalf("containers left behind: %v", c)
	}
}

func TestInteractiveInBubblewrap(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	dir := gitRepo(t)
	interactiveConfig(t, dir, `sandbox "bubblewrap" "b" {}`)
	testInteractive(t, dir)
}

// TestInteractiveCtrlCAndCrashRestoreTheTerminal: Ctrl-C reaches the agent
// (raw mode), which dies of it; another agent crashes (SIGKILL). Either
// way sanddune exits 1, keeps the commit made before and restores the
// terminal.
func TestInteractiveCtrlCAndCrashRestoreTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		name, end string
		input     string
	}{
		{"ctrl-c", "exit 0", "\x03"},
		{"crash", "kill -9 $$", "x\r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitRepo(t)
			interactiveConfig(t, dir, `sandbox = "none"`)
			s := startOnPTY(t, dir, []string{"TUI_END=" + tc.end}, "interactive")
			s.expect("name? ")
			s.send(tc.input)
			if code := s.wait(); code != 1 {
				t.Fatalf("exit %d, want 1; the terminal shows:\n%s", code, s.output())
			}
			s.expect("exited with code")
			if got := gitOut(t, dir, "log", "--format=%s", "--grep=tui: started"); got != "tui: started" {
				t.Fatalf("the commit made before the end is not on main: %q", got)
			}
		})
	}
}

// TestNoSandboxOnlyForInteractive: run and validate refuse sandbox =
// "none" at the attribute.
func TestNoSandboxOnlyForInteractive(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	interactiveConfig(t, dir, `sandbox = "none"`)
	for _, cmd := range []string{"run", "validate"} {
		r := run(t, dir, cmd)
		if r.code == 0 || !strings.Contains(r.stderr, "sanddune.hcl:6:") || !strings.Contains(r.stderr, "only for interactive sessions") {
			t.Fatalf("%s: exit %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
}

// TestUnattendedModelAgentNeedsABoundary: claude in local is refused at
// validate time (exit 1: the config has errors) unless allow_unconfined = true; the command agent is not.
func TestUnattendedModelAgentNeedsABoundary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, agent, extra string
		code               int
	}{
		{"claude refused", `agent "claude" "c" {}`, "", 1},
		{"claude allowed", `agent "claude" "c" {}`, "allow_unconfined = true", 0},
		{"command unaffected", `agent "command" "c" { command = ["true"] }`, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitRepo(t)
			writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "l" {}
`+tc.agent+`
run "r" {
  prompt = "hi"
  env    = { ANTHROPIC_API_KEY = "k" }
  `+tc.extra+`
}
`)
			r := run(t, dir, "validate")
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.code != 0 && (!strings.Contains(r.stderr, "does not confine the agent") || !strings.Contains(r.stderr, "allow_unconfined = true")) {
				t.Fatalf("the refusal does not say why:\n%s", r.stderr)
			}
		})
	}
}

// TestInteractiveKilledPluginRestoresTheTerminal kills the sandbox plugin
// while the TUI runs: the session fails (exit 1) naming the plugin and gc,
// and the terminal is restored.
func TestInteractiveKilledPluginRestoresTheTerminal(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	dir := gitRepo(t)
	interactiveConfig(t, dir, `sandbox "bubblewrap" "b" {}`)
	s := startOnPTY(t, dir, []string{"TUI_END=exit 0"}, "interactive", "tui")
	s.expect("name? ")
	var plugin int
	for _, pid := range pluginProcesses(t, s.cmd.Process.Pid) {
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "cmdline")); strings.HasSuffix(string(cmdline), "/"+builtinsBinary+"\x00") {
			plugin = pid
		}
	}
	if plugin == 0 {
		t.Fatal("no bubblewrap plugin process found during the session")
	}
	if err := unix.Kill(plugin, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(); code != 1 {
		t.Fatalf("exit %d, want 1; the terminal shows:\n%s", code, s.output())
	}
	s.expect("sandbox.bubblewrap.b")
}

// TestInteractiveAsksForAMissingPromptArgument: a {{KEY}} that prompt_args
// lacks is asked for at the terminal by interactive (the agent gets the
// answer in its prompt), and stays an error for run.
func TestInteractiveAsksForAMissingPromptArgument(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	// A fake claude TUI: it prints the prompt (its last argument).
	env := agentEnv(t, dir, "claude", "#!/bin/sh\nfor a; do last=$a; done\necho \"prompt: $last\"\n", "/dev/null")
	writeFile(t, filepath.Join(dir, ".sanddune/prompt.md"), "fix issue {{ISSUE}}\n")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `
agent "claude" "c" {}
run "fix" {
  sandbox     = "none"
  prompt_file = "prompt.md"
  env         = { ANTHROPIC_API_KEY = "k" }
}
`)
	s := startOnPTY(t, dir, env, "interactive")
	s.expect("Value for {{ISSUE}}: ")
	s.send("42\r")
	if code := s.wait(); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, s.output())
	}
	s.expect("prompt: fix issue 42")

	// run (here through validate, which plans like run) does not ask.
	cmd := sandduneCmd(dir, "validate")
	cmd.Env = append(cmd.Env, env...)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "{{ISSUE}} has no value") {
		t.Fatalf("validate: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

// TestInteractiveWithoutAPrompt: an interactive session needs no prompt:
// the agent's TUI opens with none (no prompt argument); run still needs one.
func TestInteractiveWithoutAPrompt(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	// A fake claude TUI: it says how many arguments follow its flags.
	env := agentEnv(t, dir, "claude", "#!/bin/sh\nfor a; do case $a in --) echo \"prompt given\"; exit 0;; esac; done\necho \"no prompt\"\n", "/dev/null")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `
agent "claude" "c" {}
run "chat" {
  sandbox = "none"
  env     = { ANTHROPIC_API_KEY = "k" }
}
`)
	s := startOnPTY(t, dir, env, "interactive")
	if code := s.wait(); code != 0 {
		t.Fatalf("exit %d; the terminal shows:\n%s", code, s.output())
	}
	s.expect("no prompt")

	cmd := sandduneCmd(dir, "validate")
	cmd.Env = append(cmd.Env, env...)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), `set one of prompt = "..." or prompt_file`) {
		t.Fatalf("validate: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
}
