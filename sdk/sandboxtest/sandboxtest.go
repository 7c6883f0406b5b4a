// Package sandboxtest is the conformance suite for sandbox providers. A
// plugin author calls Run from a test in their own package:
//
//	func TestConformance(t plugintest.T) {
//		sandboxtest.Run(t, myprovider.New(), sandboxtest.Options{})
//	}
//
// Run serves the provider over a real gRPC connection (sdk/plugintest);
// RunBinary starts a plugin binary in any language instead. Both check the
// contract: exit codes, streaming, stdin, env, argv vs shell,
// cwd confinement, timeouts, cancellation, copy in/out with traversal and
// symlink escapes, long lines, idempotent close, for providers that declare
// NetworkNone that a sandbox configured so really cannot connect out, for
// providers that declare Egress that CreateRequest.Egress is enforced and
// its refusals reported (sdk.EgressWatcher), for providers that declare
// Mounts that a host directory is mounted where asked and shared both
// ways, for
// isolated providers a git bundle round trip (git must be in the sandbox), for providers that
// implement sdk.SandboxRecoverer reattaching to a listed resource and, for
// providers that declare TTY, a program on a terminal (sdk.TTYSandbox). Commands run inside the
// sandbox need only POSIX sh and coreutils.
package sandboxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/internal/testkit"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// Options tune the suite for a provider.
type Options struct {
	// Config is the provider block's decoded config (an object value).
	// cty.NilVal means an empty block: attributes at their defaults.
	Config cty.Value
	// NetworkNoneConfig is the config that cuts the sandbox off the
	// network, for providers that declare NetworkNone. cty.NilVal means
	// Config with network = "none" (the convention of the built-ins).
	NetworkNoneConfig cty.Value
	// SkipNetworkNone skips the network check, saying why (e.g. a fake of
	// the provider's backend that cannot enforce anything).
	SkipNetworkNone string
	// SkipEgress skips the egress check of a provider that declares the
	// Egress capability, saying why (like SkipNetworkNone).
	SkipEgress string
}

// hangGuard bounds every call so that a broken provider fails instead of
// hanging the test binary. It is not a performance assertion.
const hangGuard = 3 * time.Minute

// Run runs the conformance suite against p.
func Run(t plugintest.T, p sdk.SandboxProvider, opts Options) {
	t.Helper()
	run(t, plugintest.Sandbox(t, p), opts)
}

// RunBinary runs the conformance suite against the sandbox component name
// of the plugin binary at path, written in any language, started as
// sanddune starts it.
func RunBinary(t plugintest.T, path, name string, opts Options) {
	t.Helper()
	sandboxes, _ := plugintest.Binary(t, path)
	c, ok := sandboxes[name]
	if !ok {
		t.Fatalf("%s serves no sandbox component %q", path, name)
	}
	run(t, c, opts)
}

func run(t plugintest.T, c sdk.SandboxProvider, opts Options) {
	t.Helper()
	ctx := context.Background()

	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	problems := testkit.CheckInfo(info)
	if info.Sandbox == nil {
		problems = append(problems, "Info.Sandbox (capabilities) is nil")
	} else if ct := info.Sandbox.Contract; ct != sdk.ContractBindMount && ct != sdk.ContractIsolated {
		problems = append(problems, fmt.Sprintf("Info.Sandbox.Contract is %q", ct))
	}
	if len(problems) > 0 {
		t.Fatalf("Info: %s", strings.Join(problems, "; "))
	}
	schema, err := c.ConfigSchema(ctx)
	if err != nil {
		t.Fatalf("ConfigSchema: %v", err)
	}
	cfg := testkit.Config(opts.Config, schema)
	diags, err := c.Configure(ctx, cfg)
	if err != nil {
		t.Fatalf("Configure: %v", err)
	}
	if diags.HasErrors() {
		t.Fatalf("Configure: %v", diags)
	}
	// A plugin that lacks Describe (another language's, say) describes
	// nothing; an error is a failure.
	desc, err := c.Describe(ctx, cfg)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if err := c.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()}); err != nil {
		t.Fatalf("Preflight: %v", err)
	}

	s := &suite{p: c, caps: *info.Sandbox, name: info.Name, cfg: cfg, env: desc.Env, opts: opts}
	if s.caps.Mounts {
		s.mounts = []sdk.Mount{{HostPath: t.TempDir(), SandboxPath: "~/.sandboxtest/mounted"}}
	}
	s.sb, s.worktree, _ = s.create(t)
	mounted := s.mounts
	s.mounts = nil
	t.Cleanup(func() {
		if err := s.sb.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	for _, tc := range []struct {
		name string
		fn   func(plugintest.T)
	}{
		{"SandboxInfo", s.testSandboxInfo},
		{"ExitCodes", s.testExitCodes},
		{"StreamOrder", s.testStreamOrder},
		{"LineEnds", s.testLineEnds},
		{"OutputWhileRunning", s.testOutputWhileRunning},
		{"Stdin", s.testStdin},
		{"Env", s.testEnv},
		{"Home", s.testHome},
		{"ArgvNotInterpreted", s.testArgv},
		{"Shell", s.testShell},
		{"Cwd", s.testCwd},
		{"CwdConfined", s.testCwdConfined},
		{"RepoConfined", s.testRepoConfined},
		{"Timeout", s.testTimeout},
		{"Cancel", s.testCancel},
		{"Concurrent", s.testConcurrent},
		{"LongLine", s.testLongLine},
		{"BindMount", s.testBindMount},
		{"Mounts", func(t plugintest.T) { s.testMounts(t, mounted) }},
		{"CopyInFile", s.testCopyInFile},
		{"CopyInDir", s.testCopyInDir},
		{"CopyOutFile", s.testCopyOutFile},
		{"CopyOutDir", s.testCopyOutDir},
		{"PathTraversal", s.testPathTraversal},
		{"SymlinkEscape", s.testSymlinkEscape},
		{"Sudo", s.testSudo},
		{"NetworkNone", s.testNetworkNone},
		{"Egress", s.testEgress},
		{"GitBundleRoundTrip", s.testGitBundleRoundTrip},
		{"Close", s.testClose},
		{"Recover", s.testRecover},
		{"TTY", s.testTTY},
		{"TTYCancel", s.testTTYCancel},
	} {
		plugintest.Run(t, tc.name, tc.fn)
	}
}

type suite struct {
	p        sdk.SandboxProvider
	caps     sdk.SandboxCapabilities
	name     string
	cfg      sdk.Config
	env      map[string]string // the provider's env layer (Describe)
	opts     Options
	egress   *sdk.EgressPolicy // the policy create passes
	mounts   []sdk.Mount       // the mounts create asks for
	sb       sdk.Sandbox
	worktree string // host worktree (bind-mount contract)
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// create makes a sandbox the way the host does for one run and returns it,
// its host worktree (bind-mount contract) and its run id.
func (s *suite) create(t plugintest.T) (sdk.Sandbox, string, string) {
	t.Helper()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	runID := "sandboxtest-" + randomID()
	host, _ := os.Hostname()
	// The env the host passes: the provider's layer below the run's.
	env := maps.Clone(s.env)
	if env == nil {
		env = map[string]string{}
	}
	env["SANDDUNE_TEST_CREATE_ENV"], env["SANDDUNE_TEST_OVERRIDE"] = "from-create", "create"
	req := sdk.CreateRequest{
		Config:       s.cfg,
		RunID:        runID,
		RunName:      "sandboxtest",
		HostRepoPath: repo,
		Env:          env,
		Labels: map[string]string{
			sdk.LabelRun:     runID,
			sdk.LabelSandbox: "sandbox." + s.name + ".sandboxtest",
			sdk.LabelPID:     strconv.Itoa(os.Getpid()),
			sdk.LabelHost:    host,
		},
		HostUID: os.Getuid(),
		HostGID: os.Getgid(),
		Egress:  s.egress,
		Mounts:  s.mounts,
	}
	var worktree string
	if s.caps.Contract == sdk.ContractBindMount {
		worktree = filepath.Join(root, "worktree")
		if err := os.Mkdir(worktree, 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		req.WorktreePath = worktree
	}
	// Progress reports (if the provider makes any) arrive while Create
	// runs, each a line for the user.
	var mu sync.Mutex
	var progress []sdk.Progress
	req.Progress = func(p sdk.Progress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	sb, err := s.p.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range progress {
		if strings.TrimSpace(p.Message) == "" || strings.Contains(p.Message, "\n") {
			t.Errorf("Create reported progress %+v: want one line of text", p)
		}
	}
	return sb, worktree, runID
}

// result is one Exec: its result, error and output lines (pieces joined).
type result struct {
	sdk.ExecResult
	err    error
	stdout []string
	stderr []string
	pieces []sdk.OutputLine // every piece as received (Text copied)
}

func (r result) String() string {
	return fmt.Sprintf("exit %d timedOut %v err %v stdout %q stderr %q", r.ExitCode, r.TimedOut, r.err, r.stdout, r.stderr)
}

// exec runs req; onLine (optional) sees each complete stdout line as it
// arrives.
func (s *suite) exec(ctx context.Context, req sdk.ExecRequest, onLine func(string)) result {
	ctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	var r result
	partial := map[sdk.Stream][]byte{} // a line's pieces so far
	r.ExecResult, r.err = s.sb.Exec(ctx, req, func(l sdk.OutputLine) {
		r.pieces = append(r.pieces, sdk.OutputLine{Stream: l.Stream, Text: bytes.Clone(l.Text), Partial: l.Partial})
		line := append(partial[l.Stream], l.Text...)
		if l.Partial {
			partial[l.Stream] = line
			return
		}
		delete(partial, l.Stream)
		switch l.Stream {
		case sdk.Stdout:
			r.stdout = append(r.stdout, string(line))
			if onLine != nil {
				onLine(string(line))
			}
		case sdk.Stderr:
			r.stderr = append(r.stderr, string(line))
		}
	})
	return r
}

// mustExec runs req and fails unless it exits 0.
func (s *suite) mustExec(t plugintest.T, req sdk.ExecRequest) result {
	t.Helper()
	r := s.exec(context.Background(), req, nil)
	if r.err != nil || r.ExitCode != 0 || r.TimedOut {
		t.Fatalf("Exec %q %q: %v", req.Argv, req.Shell, r)
	}
	return r
}

func sh(script string, args ...string) sdk.ExecRequest {
	return sdk.ExecRequest{Argv: append([]string{"sh", "-c", script, "sh"}, args...)}
}

func (s *suite) testSandboxInfo(t plugintest.T) {
	info := s.sb.Info()
	if info.ID == "" {
		t.Errorf("SandboxInfo.ID is empty")
	}
	if !path.IsAbs(info.RepoPath) {
		t.Errorf("SandboxInfo.RepoPath %q is not absolute", info.RepoPath)
	}
	if info.HomePath != "" && !path.IsAbs(info.HomePath) {
		t.Errorf("SandboxInfo.HomePath %q is not absolute", info.HomePath)
	}
	// The host trusts a reported UID instead of asking: it must be the
	// user commands run as.
	if info.UID != nil {
		r := s.mustExec(t, sdk.ExecRequest{Argv: []string{"id", "-u"}})
		if got := strings.Join(r.stdout, ""); got != strconv.Itoa(*info.UID) {
			t.Errorf("SandboxInfo.UID is %d, but commands run as uid %q", *info.UID, got)
		}
	}
}

func (s *suite) testExitCodes(t plugintest.T) {
	for _, code := range []int{0, 3, 255} {
		r := s.exec(context.Background(), sh(fmt.Sprintf("exit %d", code)), nil)
		if r.err != nil || r.ExitCode != code || r.TimedOut {
			t.Errorf("exit %d: got %v", code, r)
		}
	}
	r := s.exec(context.Background(), sdk.ExecRequest{Argv: []string{"false"}}, nil)
	if r.err != nil || r.ExitCode != 1 {
		t.Errorf("false: got %v", r)
	}
}

func (s *suite) testStreamOrder(t plugintest.T) {
	const n = 500
	r := s.mustExec(t, sh(`i=1; while [ $i -le `+strconv.Itoa(n)+` ]; do echo out$i; echo err$i >&2; i=$((i+1)); done`))
	var wantOut, wantErr []string
	for i := 1; i <= n; i++ {
		wantOut = append(wantOut, fmt.Sprintf("out%d", i))
		wantErr = append(wantErr, fmt.Sprintf("err%d", i))
	}
	if !slices.Equal(r.stdout, wantOut) {
		t.Errorf("stdout lines out of order or missing:\n got %q\nwant out1..out%d", r.stdout, n)
	}
	if !slices.Equal(r.stderr, wantErr) {
		t.Errorf("stderr lines out of order or missing:\n got %q\nwant err1..err%d", r.stderr, n)
	}
}

func (s *suite) testLineEnds(t plugintest.T) {
	r := s.mustExec(t, sh(`printf 'x\n\ny\nlast'`))
	if want := []string{"x", "", "y", "last"}; !slices.Equal(r.stdout, want) {
		t.Errorf("stdout %q, want %q (empty lines kept, unterminated last line delivered)", r.stdout, want)
	}
}

func (s *suite) testOutputWhileRunning(t plugintest.T) {
	marker := ".sandboxtest-marker-" + randomID()
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan result, 1)
	go func() {
		req := sh(`echo ready; while [ ! -e "$1" ]; do sleep 0.1; done; echo done`, marker)
		req.Timeout = hangGuard / 2
		done <- s.exec(context.Background(), req, func(line string) {
			if line == "ready" {
				once.Do(func() { close(ready) })
			}
		})
	}()
	select {
	case <-ready:
	case r := <-done:
		t.Fatalf("no output arrived while the command ran: %v", r)
	}
	s.mustExec(t, sdk.ExecRequest{Argv: []string{"touch", marker}})
	r := <-done
	if r.err != nil || r.ExitCode != 0 || r.TimedOut || !slices.Equal(r.stdout, []string{"ready", "done"}) {
		t.Errorf("got %v, want exit 0 with ready, done", r)
	}
}

func (s *suite) testStdin(t plugintest.T) {
	r := s.mustExec(t, sdk.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("line one\nline two\n")})
	if want := []string{"line one", "line two"}; !slices.Equal(r.stdout, want) {
		t.Errorf("cat with stdin: stdout %q, want %q", r.stdout, want)
	}
	// Nil stdin must give EOF at once, not hang.
	req := sdk.ExecRequest{Argv: []string{"cat"}, Timeout: hangGuard / 2}
	r = s.exec(context.Background(), req, nil)
	if r.err != nil || r.ExitCode != 0 || r.TimedOut || len(r.stdout) != 0 {
		t.Errorf("cat without stdin: %v, want exit 0 and no output (stdin closed)", r)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 16<<10)
	r = s.mustExec(t, sdk.ExecRequest{Argv: []string{"wc", "-c"}, Stdin: big})
	if len(r.stdout) != 1 || strings.TrimSpace(r.stdout[0]) != strconv.Itoa(len(big)) {
		t.Errorf("wc -c of %d stdin bytes: %q", len(big), r.stdout)
	}
}

func (s *suite) testEnv(t plugintest.T) {
	odd := `a b $X 'q' "d" \n`
	r := s.mustExec(t, sdk.ExecRequest{
		Argv: []string{"sh", "-c", `printf '%s|%s|%s\n' "$SANDDUNE_TEST_CREATE_ENV" "$SANDDUNE_TEST_EXEC_ENV" "$SANDDUNE_TEST_OVERRIDE"; printf '%s\n' "$SANDDUNE_TEST_ODD"`},
		Env: map[string]string{
			"SANDDUNE_TEST_EXEC_ENV": "from-exec",
			"SANDDUNE_TEST_OVERRIDE": "exec",
			"SANDDUNE_TEST_ODD":      odd,
		},
	})
	if want := []string{"from-create|from-exec|exec", odd}; !slices.Equal(r.stdout, want) {
		t.Errorf("env: stdout %q, want %q (create env, exec env, exec env overrides create env)", r.stdout, want)
	}
}

func (s *suite) testHome(t plugintest.T) {
	home := s.sb.Info().HomePath
	if home == "" {
		t.Skipf("SandboxInfo.HomePath is empty")
	}
	r := s.mustExec(t, sh(`printf '%s\n' "$HOME"; test -d "$HOME" && test -w "$HOME" && echo ok`))
	if want := []string{home, "ok"}; !slices.Equal(r.stdout, want) {
		t.Errorf("HOME: stdout %q, want %q (HOME is HomePath, a writable dir)", r.stdout, want)
	}
}

func (s *suite) testArgv(t plugintest.T) {
	args := []string{"a b", `"quoted"`, "'single'", "$(echo injected)", "$HOME", "*", "semi;colon", "back`echo tick`", "x && y", ""}
	r := s.mustExec(t, sdk.ExecRequest{Argv: append([]string{"printf", `%s\n`}, args...)})
	if !slices.Equal(r.stdout, args) {
		t.Errorf("argv was interpreted:\n got %q\nwant %q", r.stdout, args)
	}
}

func (s *suite) testShell(t plugintest.T) {
	r := s.mustExec(t, sdk.ExecRequest{Shell: `x=$((1+2)); echo "$x" | cat; exit 0`})
	if want := []string{"3"}; !slices.Equal(r.stdout, want) {
		t.Errorf("shell: stdout %q, want %q", r.stdout, want)
	}
	r = s.exec(context.Background(), sdk.ExecRequest{Shell: "exit 7"}, nil)
	if r.err != nil || r.ExitCode != 7 {
		t.Errorf("shell exit 7: %v", r)
	}
}

func (s *suite) testCwd(t plugintest.T) {
	repo := s.sb.Info().RepoPath
	s.mustExec(t, sdk.ExecRequest{Argv: []string{"mkdir", "-p", "sandboxtest-cwd/sub"}})
	want := s.mustExec(t, sh(`cd "$1" && pwd -P`, repo)).stdout
	if got := s.mustExec(t, sdk.ExecRequest{Argv: []string{"pwd", "-P"}}).stdout; !slices.Equal(got, want) {
		t.Errorf("default cwd: %q, want RepoPath %q", got, want)
	}
	for _, cwd := range []string{"sandboxtest-cwd/sub", path.Join(repo, "sandboxtest-cwd/sub")} {
		r := s.mustExec(t, sdk.ExecRequest{Argv: []string{"pwd", "-P"}, Cwd: cwd})
		if len(r.stdout) != 1 || !strings.HasSuffix(r.stdout[0], "/sandboxtest-cwd/sub") {
			t.Errorf("cwd %q: pwd %q", cwd, r.stdout)
		}
	}
}

// hostSecret makes a host dir outside the sandbox holding a file "secret".
func hostSecret(t plugintest.T) (dir, secret string) {
	dir = t.TempDir()
	secret = "sandboxtest-secret-" + randomID()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	return dir, secret
}

// traversal is a relative path climbing out of any sandbox path to the
// absolute path p.
func (s *suite) traversal(p string) string {
	return strings.Repeat("../", 40) + strings.TrimPrefix(p, "/")
}

func (s *suite) testCwdConfined(t plugintest.T) {
	dir, secret := hostSecret(t)
	link := "sandboxtest-cwdlink-" + randomID()
	s.mustExec(t, sdk.ExecRequest{Argv: []string{"ln", "-s", dir, link}})
	for _, cwd := range []string{dir, s.traversal(dir), link} {
		r := s.exec(context.Background(), sdk.ExecRequest{Argv: []string{"cat", "secret"}, Cwd: cwd}, nil)
		if r.err == nil && r.ExitCode == 0 && slices.Contains(r.stdout, secret) {
			t.Errorf("cwd %q escaped the sandbox: read a host file outside it", cwd)
		}
	}
}

// testRepoConfined: relative paths resolve against RepoPath and may not
// leave it, even where the sandbox could reach the directory above the
// repository with an absolute path; the error matches sdk.ErrConfinement.
func (s *suite) testRepoConfined(t plugintest.T) {
	name := "sandboxtest-escape-" + randomID() + ".txt"
	src := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, src, "escaped\n", 0o644)
	err := s.copyIn(src, "../"+name)
	if err == nil {
		t.Errorf("CopyIn to %q succeeded: a relative path must not leave the repository", "../"+name)
	} else if !errors.Is(err, sdk.ErrConfinement) {
		t.Errorf("CopyIn to %q: the error %q does not match sdk.ErrConfinement", "../"+name, err)
	}
	above := path.Join(path.Dir(s.sb.Info().RepoPath), name)
	if r := s.exec(context.Background(), sh(`test -e "$1"`, above), nil); r.err == nil && r.ExitCode == 0 {
		t.Errorf("CopyIn to %q wrote %s", "../"+name, above)
	}
	for _, cwd := range []string{"..", "sub/../.."} {
		r := s.exec(context.Background(), sdk.ExecRequest{Argv: []string{"pwd"}, Cwd: cwd}, nil)
		if r.err == nil {
			t.Errorf("Exec with Cwd %q ran (%v): a relative cwd must not leave the repository", cwd, r)
		} else if !errors.Is(r.err, sdk.ErrConfinement) {
			t.Errorf("Exec with Cwd %q: the error %q does not match sdk.ErrConfinement", cwd, r.err)
		}
	}
}

// ticker starts a background process (a child of the command's shell) that
// bumps a counter in the file $1 until it is killed, prints "started" and
// waits for it.
const ticker = `( i=0; while :; do i=$((i+1)); echo $i > "$1"; sleep 0.05; done ) &
echo started
wait`

// stillTicks exits 0 when the counter in $1 still changes after polling a
// while: process ids differ between pid namespaces, a file does not.
const stillTicks = `n=0
while [ $n -lt 20 ]; do
  a=$(cat "$1" 2>/dev/null); sleep 0.5; b=$(cat "$1" 2>/dev/null)
  [ "$a" = "$b" ] && exit 1
  n=$((n+1))
done
exit 0`

// checkGone fails when the ticker writing to file still runs.
func (s *suite) checkGone(t plugintest.T, file string) {
	t.Helper()
	r := s.exec(context.Background(), sh(stillTicks, file), nil)
	if r.err != nil {
		t.Fatalf("checking the process tree: %v", r)
	}
	if r.ExitCode == 0 {
		t.Errorf("a background process of the command still runs after the Exec ended (the whole process tree must be killed)")
	}
}

func (s *suite) testTimeout(t plugintest.T) {
	file := ".sandboxtest-tick-" + randomID()
	req := sh(ticker, file)
	req.Timeout = 3 * time.Second
	r := s.exec(context.Background(), req, nil)
	if r.err != nil || !r.TimedOut {
		t.Fatalf("got %v, want TimedOut", r)
	}
	s.checkGone(t, file)
}

func (s *suite) testCancel(t plugintest.T) {
	file := ".sandboxtest-tick-" + randomID()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	var once sync.Once
	done := make(chan result, 1)
	go func() {
		done <- s.exec(ctx, sh(ticker, file), func(line string) {
			if line == "started" {
				once.Do(func() { close(started) })
			}
		})
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("command ended before it was cancelled: %v", r)
	}
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("Exec after cancel: %v, want context.Canceled", r)
	}
	s.checkGone(t, file)
	// Cancelling one command leaves the sandbox usable.
	if r := s.exec(context.Background(), sh(`echo still usable`), nil); r.err != nil || r.ExitCode != 0 || !slices.Equal(r.stdout, []string{"still usable"}) {
		t.Errorf("Exec after a cancelled one: %v, want the sandbox still usable", r)
	}
}

func (s *suite) testConcurrent(t plugintest.T) {
	var wg sync.WaitGroup
	results := make([]result, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.exec(context.Background(), sh(`echo "start $1"; sleep 0.2; echo "end $1"`, strconv.Itoa(i)), nil)
		}()
	}
	wg.Wait()
	for i, r := range results {
		want := []string{fmt.Sprintf("start %d", i), fmt.Sprintf("end %d", i)}
		if r.err != nil || r.ExitCode != 0 || !slices.Equal(r.stdout, want) {
			t.Errorf("concurrent exec %d: %v, want %q", i, r, want)
		}
	}
}

func (s *suite) testLongLine(t plugintest.T) {
	n := 2*sdk.MaxLineBytes + sdk.MaxLineBytes/2
	r := s.mustExec(t, sh(`head -c "$1" /dev/zero | tr '\0' x; echo; echo after`, strconv.Itoa(n)))
	if len(r.stdout) != 2 || len(r.stdout[0]) != n || strings.Trim(r.stdout[0], "x") != "" || r.stdout[1] != "after" {
		lens := make([]int, len(r.stdout))
		for i, l := range r.stdout {
			lens[i] = len(l)
		}
		t.Fatalf("long line: got %d lines of lengths %v, want one line of %d 'x' then \"after\"", len(r.stdout), lens, n)
	}
	partial := false
	for _, p := range r.pieces {
		if len(p.Text) > sdk.MaxLineBytes {
			t.Errorf("a piece of %d bytes exceeds MaxLineBytes", len(p.Text))
		}
		partial = partial || p.Partial
	}
	if !partial {
		t.Errorf("no piece was marked Partial")
	}
}

func (s *suite) testBindMount(t plugintest.T) {
	if s.caps.Contract != sdk.ContractBindMount {
		t.Skipf("isolated provider")
	}
	if err := os.WriteFile(filepath.Join(s.worktree, "sandboxtest-host.txt"), []byte("from host\n"), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	r := s.mustExec(t, sh(`cat sandboxtest-host.txt; echo from sandbox > sandboxtest-sandbox.txt`))
	if !slices.Equal(r.stdout, []string{"from host"}) {
		t.Errorf("sandbox read %q from the worktree, want \"from host\"", r.stdout)
	}
	got, err := os.ReadFile(filepath.Join(s.worktree, "sandboxtest-sandbox.txt"))
	if err != nil || string(got) != "from sandbox\n" {
		t.Errorf("host reading a file the sandbox wrote in RepoPath: %q, %v", got, err)
	}
}

// testMounts: a provider that declares Mounts mounts the host directory
// asked for at its sandbox path under the home, says so in Info, and a
// file written on either side is read on the other, as the sandbox's user.
// A provider may leave a mount out where it cannot make it writable (the
// host then copies): that skips, as long as Info does not list it.
func (s *suite) testMounts(t plugintest.T, asked []sdk.Mount) {
	if !s.caps.Mounts {
		t.Skipf("provider does not declare Mounts")
	}
	info := s.sb.Info()
	want := sdk.Mount{HostPath: asked[0].HostPath, SandboxPath: path.Join(info.HomePath, ".sandboxtest", "mounted")}
	if !slices.Contains(info.Mounts, want) {
		if slices.ContainsFunc(info.Mounts, func(m sdk.Mount) bool { return m.HostPath == want.HostPath }) {
			t.Fatalf("Info().Mounts = %+v, want %+v", info.Mounts, want)
		}
		t.Skipf("the provider left the mount out here (Info().Mounts = %+v): the host copies instead", info.Mounts)
	}
	if err := os.WriteFile(filepath.Join(want.HostPath, "from-host.txt"), []byte("from host\n"), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	r := s.mustExec(t, sh(`cd "$1" && cat from-host.txt && mkdir -p sub && echo from sandbox > sub/from-sandbox.txt`, want.SandboxPath))
	if !slices.Equal(r.stdout, []string{"from host"}) || r.ExitCode != 0 {
		t.Errorf("sandbox reading and writing the mounted directory: %v", r)
	}
	got, err := os.ReadFile(filepath.Join(want.HostPath, "sub", "from-sandbox.txt"))
	if err != nil || string(got) != "from sandbox\n" {
		t.Errorf("host reading a file the sandbox wrote in the mounted directory: %q, %v", got, err)
	}
}

func writeFile(t plugintest.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatalf("%v", err)
	}
}

func (s *suite) copyIn(hostPath, sandboxPath string) error {
	return copyInto(s.sb, hostPath, sandboxPath)
}

func (s *suite) copyOut(sandboxPath, hostPath string) error {
	return copyOutOf(s.sb, sandboxPath, hostPath)
}

func copyInto(sb sdk.Sandbox, hostPath, sandboxPath string) error {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	return sb.CopyIn(ctx, hostPath, sandboxPath)
}

func copyOutOf(sb sdk.Sandbox, sandboxPath, hostPath string) error {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	return sb.CopyOut(ctx, sandboxPath, hostPath)
}

func (s *suite) testCopyInFile(t plugintest.T) {
	src := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, src, "copied in\n", 0o644)
	abs := path.Join(s.sb.Info().RepoPath, "sandboxtest-in-abs.txt")
	for _, dst := range []string{"sandboxtest-in.txt", abs} {
		if err := s.copyIn(src, dst); err != nil {
			t.Fatalf("CopyIn %s: %v", dst, err)
		}
		if r := s.mustExec(t, sdk.ExecRequest{Argv: []string{"cat", dst}}); !slices.Equal(r.stdout, []string{"copied in"}) {
			t.Errorf("after CopyIn %s: %q", dst, r.stdout)
		}
	}
	writeFile(t, src, "replaced\n", 0o644)
	if err := s.copyIn(src, "sandboxtest-in.txt"); err != nil {
		t.Fatalf("CopyIn over an existing file: %v", err)
	}
	if r := s.mustExec(t, sdk.ExecRequest{Argv: []string{"cat", "sandboxtest-in.txt"}}); !slices.Equal(r.stdout, []string{"replaced"}) {
		t.Errorf("after CopyIn over an existing file: %q", r.stdout)
	}
}

func skipUnsupported(t plugintest.T, op string, err error) {
	t.Helper()
	if errors.Is(err, sdk.ErrNotSupported) {
		t.Skipf("%s: %v", op, err)
	}
}

func (s *suite) testCopyInDir(t plugintest.T) {
	src := filepath.Join(t.TempDir(), "tree")
	writeFile(t, filepath.Join(src, "a.txt"), "a\n", 0o644)
	writeFile(t, filepath.Join(src, "sub", "b.txt"), "b\n", 0o644)
	writeFile(t, filepath.Join(src, "sub", "run.sh"), "#!/bin/sh\necho ran\n", 0o755)
	if err := os.MkdirAll(filepath.Join(src, "empty"), 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	err := s.copyIn(src, "sandboxtest-dir")
	skipUnsupported(t, "CopyIn of a directory", err)
	if err != nil {
		t.Fatalf("CopyIn of a directory: %v", err)
	}
	r := s.mustExec(t, sh(`cd sandboxtest-dir && cat a.txt sub/b.txt && ./sub/run.sh && test -d empty && echo empty`))
	if want := []string{"a", "b", "ran", "empty"}; !slices.Equal(r.stdout, want) {
		t.Errorf("copied tree: %q, want %q (files, modes and empty dirs kept)", r.stdout, want)
	}
}

func (s *suite) testCopyOutFile(t plugintest.T) {
	s.mustExec(t, sh(`printf 'out\ncontent' > sandboxtest-out.txt`))
	dst := filepath.Join(t.TempDir(), "out.txt")
	if err := s.copyOut("sandboxtest-out.txt", dst); err != nil {
		t.Fatalf("CopyOut: %v", err)
	}
	if got, err := os.ReadFile(dst); err != nil || string(got) != "out\ncontent" {
		t.Errorf("CopyOut file: %q, %v", got, err)
	}
	abs := path.Join(s.sb.Info().RepoPath, "sandboxtest-out.txt")
	dst2 := filepath.Join(t.TempDir(), "out2.txt")
	if err := s.copyOut(abs, dst2); err != nil {
		t.Fatalf("CopyOut %s: %v", abs, err)
	}
	for _, missing := range []string{"sandboxtest-missing-" + randomID(), "sandboxtest-missing-" + randomID() + "/sub"} {
		if err := s.copyOut(missing, filepath.Join(t.TempDir(), "x")); !errors.Is(err, sdk.ErrNotFound) {
			t.Errorf("CopyOut of the missing %s: %v, want an error matching sdk.ErrNotFound", missing, err)
		}
	}
}

func (s *suite) testCopyOutDir(t plugintest.T) {
	s.mustExec(t, sh(`mkdir -p sandboxtest-outdir/sub && echo x > sandboxtest-outdir/sub/f && echo y > sandboxtest-outdir/g`))
	dst := filepath.Join(t.TempDir(), "outdir")
	err := s.copyOut("sandboxtest-outdir", dst)
	skipUnsupported(t, "CopyOut of a directory", err)
	if err != nil {
		t.Fatalf("CopyOut of a directory: %v", err)
	}
	for name, want := range map[string]string{"sub/f": "x\n", "g": "y\n"} {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
			t.Errorf("CopyOut dir: %s = %q, %v; want %q", name, got, err, want)
		}
	}
}

// leaked fails when p (not followed if a symlink), or any regular file
// under it, holds secret.
func leaked(t plugintest.T, p, secret string) {
	t.Helper()
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, _ := os.ReadFile(q); bytes.Contains(b, []byte(secret)) {
			t.Errorf("host file outside the sandbox leaked into %s", q)
		}
		return nil
	})
}

func (s *suite) testPathTraversal(t plugintest.T) {
	dir, secret := hostSecret(t)
	src := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, src, "escaped\n", 0o644)
	for _, dst := range []string{s.traversal(dir) + "/escaped", "../" + s.traversal(dir) + "/escaped"} {
		err := s.copyIn(src, dst)
		if _, serr := os.Lstat(filepath.Join(dir, "escaped")); serr == nil {
			t.Errorf("CopyIn to %q wrote a host file outside the sandbox (err %v)", dst, err)
		}
	}
	out := t.TempDir()
	_ = s.copyOut(s.traversal(dir)+"/secret", filepath.Join(out, "leak"))
	_ = s.copyOut(s.traversal(dir), filepath.Join(out, "leakdir"))
	leaked(t, out, secret)
}

func (s *suite) testSymlinkEscape(t plugintest.T) {
	dir, secret := hostSecret(t)
	id := randomID()
	dirLink, fileLink := "sandboxtest-dirlink-"+id, "sandboxtest-filelink-"+id
	s.mustExec(t, sh(`ln -s "$1" "$2" && ln -s "$1/secret" "$3"`, dir, dirLink, fileLink))

	src := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, src, "escaped\n", 0o644)
	err := s.copyIn(src, dirLink+"/escaped")
	if _, serr := os.Lstat(filepath.Join(dir, "escaped")); serr == nil {
		t.Errorf("CopyIn through a symlink wrote a host file outside the sandbox (err %v)", err)
	}
	_ = s.copyIn(src, fileLink)
	if b, _ := os.ReadFile(filepath.Join(dir, "secret")); !bytes.Contains(b, []byte(secret)) {
		t.Errorf("CopyIn onto a symlink overwrote a host file outside the sandbox")
	}
	out := t.TempDir()
	_ = s.copyOut(fileLink, filepath.Join(out, "leak"))
	_ = s.copyOut(dirLink, filepath.Join(out, "leakdir"))
	leaked(t, out, secret)
}

func (s *suite) testSudo(t plugintest.T) {
	if !s.caps.Sudo {
		t.Skipf("provider does not declare Sudo")
	}
	r := s.mustExec(t, sdk.ExecRequest{Argv: []string{"id", "-u"}, Sudo: true})
	if !slices.Equal(r.stdout, []string{"0"}) {
		t.Errorf("id -u with Sudo: %q, want 0", r.stdout)
	}
}

func (s *suite) testClose(t plugintest.T) {
	sb, _, _ := s.create(t)
	ctx := context.Background()
	if err := sb.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sb.Close(ctx); err != nil {
		t.Errorf("second Close: %v (must be idempotent)", err)
	}
	if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); err == nil {
		t.Errorf("Exec after Close did not fail")
	}
	src := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, src, "x\n", 0o644)
	if err := sb.CopyIn(ctx, src, "x.txt"); err == nil {
		t.Errorf("CopyIn after Close did not fail")
	}
}

// testRecover reattaches to a listed sandbox (sdk.SandboxRecoverer),
// listed and recovered with the config it was created with, as gc does
// for a configured sandbox block: the handle sees the sandbox's files,
// and closing it leaves the sandbox.
func (s *suite) testRecover(t plugintest.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	sb, _, runID := s.create(t)
	defer sb.Close(context.Background())
	run := func(sb sdk.Sandbox, req sdk.ExecRequest) string {
		t.Helper()
		var out bytes.Buffer
		res, err := sb.Exec(ctx, req, func(l sdk.OutputLine) {
			if l.Stream == sdk.Stdout {
				out.Write(l.Text)
			}
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Exec %q: %+v, %v", req.Argv, res, err)
		}
		return out.String()
	}
	run(sb, sh(`echo unsynced > sandboxtest-recover.txt`))

	res, err := s.p.(sdk.ResourceLister).ListResources(ctx, s.cfg)
	skipUnsupported(t, "ListResources", err)
	if err != nil {
		t.Fatalf("ListResources: %v", err)
	}
	i := slices.IndexFunc(res, func(r sdk.Resource) bool { return r.Labels[sdk.LabelRun] == runID })
	if i < 0 {
		t.Fatalf("ListResources does not list the sandbox of run %s: %+v", runID, res)
	}
	rec := s.p.(sdk.SandboxRecoverer)
	got, err := rec.Recover(ctx, s.cfg, res[i].ID)
	skipUnsupported(t, "Recover", err)
	if err != nil {
		t.Fatalf("Recover(%q): %v", res[i].ID, err)
	}
	if info := got.Info(); info.RepoPath != sb.Info().RepoPath {
		t.Errorf("recovered RepoPath %q, want %q", info.RepoPath, sb.Info().RepoPath)
	}
	if out := run(got, sdk.ExecRequest{Argv: []string{"cat", "sandboxtest-recover.txt"}}); out != "unsynced" {
		t.Errorf("the recovered sandbox reads %q, want the file written before", out)
	}
	if err := got.Close(ctx); err != nil {
		t.Fatalf("Close of the recovered sandbox: %v", err)
	}
	if out := run(sb, sdk.ExecRequest{Argv: []string{"cat", "sandboxtest-recover.txt"}}); out != "unsynced" {
		t.Errorf("after closing the recovered handle the sandbox reads %q: Close must leave the resource", out)
	}
	if _, err := rec.Recover(ctx, s.cfg, t.TempDir()); err == nil {
		t.Errorf("Recover of a directory that is no sandbox did not fail")
	}
}

// ttyProgram is a small interactive program: it answers each line it
// reads, prints the terminal size on "size" and exits 3 on "quit".
const ttyProgram = `stty size; echo ready
while IFS= read -r line; do
  case $line in
    size) echo "size=$(stty size)" ;;
    quit) echo bye; exit 3 ;;
    *) echo "got:$line" ;;
  esac
done`

// ttyExec starts ttyProgram on a terminal; the result arrives on the
// returned channel.
func (s *suite) ttyExec(t plugintest.T, ctx context.Context, screen *testkit.Screen, stdin *io.PipeReader, resize chan sdk.WindowSize) <-chan result {
	t.Helper()
	if !s.caps.TTY {
		t.Skipf("provider does not declare TTY")
	}
	tsb, ok := s.sb.(sdk.TTYSandbox)
	if !ok {
		t.Fatalf("the host's sandbox handle does not implement sdk.TTYSandbox")
	}
	done := make(chan result, 1)
	go func() {
		defer screen.Close()
		var r result
		r.ExecResult, r.err = tsb.ExecTTY(ctx, sh(ttyProgram), sdk.TTY{
			Size: sdk.WindowSize{Rows: 24, Cols: 80}, Stdin: stdin, Output: screen, Resize: resize,
		})
		done <- r
	}()
	return done
}

// testTTY drives ttyProgram like a user at a terminal: its size, a line
// typed and echoed, a resize it sees, and its exit code.
func (s *suite) testTTY(t plugintest.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	screen := testkit.NewScreen()
	stdin, typed := io.Pipe()
	defer typed.Close()
	resize := make(chan sdk.WindowSize, 1)
	done := s.ttyExec(t, ctx, screen, stdin, resize)
	expect := func(text string) {
		t.Helper()
		if err := screen.WaitFor(ctx, text); err != nil {
			t.Fatalf("%v", err)
		}
	}
	typeLine := func(line string) {
		t.Helper()
		if _, err := io.WriteString(typed, line+"\r"); err != nil {
			t.Fatalf("typing %q: %v", line, err)
		}
	}
	expect("24 80")
	expect("ready")
	typeLine("hello terminal")
	expect("got:hello terminal")

	// A resize travels beside the input: ask until the program sees it.
	resize <- sdk.WindowSize{Rows: 40, Cols: 120}
	for {
		typeLine("size")
		if err := screen.WaitFor(ctx, "size="); err != nil {
			t.Fatalf("%v", err)
		}
		if err := screen.WaitFor(ctx, "\n"); err != nil {
			t.Fatalf("%v", err)
		}
		out := screen.String()
		line := out[strings.LastIndex(out, "size="):]
		if strings.HasPrefix(line, "size=40 120") {
			break
		}
		if !strings.HasPrefix(line, "size=24 80") {
			t.Fatalf("stty size after a resize to 40x120: %q", line)
		}
	}
	typeLine("quit")
	expect("bye")
	r := <-done
	if r.err != nil || r.ExitCode != 3 {
		t.Errorf("ExecTTY: %v, want exit 3; output:\n%s", r, screen)
	}
}

// testTTYCancel: cancelling ExecTTY kills the program and the sandbox stays
// usable.
func (s *suite) testTTYCancel(t plugintest.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	screen := testkit.NewScreen()
	stdin, typed := io.Pipe()
	defer typed.Close()
	done := s.ttyExec(t, ctx, screen, stdin, nil)
	wait, stop := context.WithTimeout(context.Background(), hangGuard)
	defer stop()
	if err := screen.WaitFor(wait, "ready"); err != nil {
		t.Fatalf("%v", err)
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("ExecTTY after cancel: %v, want context.Canceled", r)
		}
	case <-wait.Done():
		t.Fatalf("ExecTTY did not return after its context was cancelled")
	}
	if r := s.exec(context.Background(), sh(`echo still usable`), nil); r.err != nil || !slices.Equal(r.stdout, []string{"still usable"}) {
		t.Errorf("Exec after a cancelled ExecTTY: %v", r)
	}
}
