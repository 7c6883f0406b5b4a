package pluginhost

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/sdk"
)

// fakePlugin is testdata/fakeplugin, built once per test binary.
var fakePlugin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pluginhost-test-")
	if err != nil {
		panic(err)
	}
	fakePlugin = filepath.Join(dir, "fakeplugin")
	out, err := exec.Command("go", "build", "-o", fakePlugin, "./testdata/fakeplugin").CombinedOutput()
	if err != nil {
		panic("building testdata/fakeplugin: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pluginDir returns a directory holding the fake plugin as
// sanddune-plugin-<name> for each name.
func pluginDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Symlink(fakePlugin, filepath.Join(dir, BinaryPrefix+n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ownBinaries maps each built-in name to a binary of its own,
// sanddune-plugin-<name>.
func ownBinaries(names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = BinaryPrefix + n
	}
	return m
}

// installed returns the path of a sanddune executable installed with the
// binaries of the built-ins beside it (each the fake plugin, serving what
// its name says), as make install lays them out.
func installed(t *testing.T, builtins map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	exe := filepath.Join(dir, "sanddune")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bin := range builtins {
		if err := os.Symlink(fakePlugin, filepath.Join(dir, bin)); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	}
	return exe
}

func newHost(t *testing.T, pluginPath string, builtins ...string) (*Host, *bytes.Buffer) {
	t.Helper()
	return newHostOf(t, pluginPath, ownBinaries(builtins...))
}

// newHostOf is newHost with the built-ins mapped to their binaries.
func newHostOf(t *testing.T, pluginPath string, builtins map[string]string) (*Host, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	h := New(Options{
		Builtins:   builtins,
		Executable: installed(t, builtins),
		Getenv: func(k string) string {
			if k == "SANDDUNE_PLUGIN_PATH" {
				return pluginPath
			}
			return ""
		},
		Logger: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{w: &logs}, Level: hclog.Info}),
	})
	t.Cleanup(h.Close)
	return h, &logs
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestSearchDirsOrder(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SANDDUNE_PLUGIN_PATH": "/a:/b", "XDG_DATA_HOME": "/data", "HOME": "/home/u"}
	got := SearchDirs("/repo", func(k string) string { return env[k] }, "/opt/bin/sanddune")
	want := []string{"/a", "/b", "/repo/.sanddune/plugins", "/data/sanddune/plugins", "/opt/bin"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	delete(env, "XDG_DATA_HOME")
	got = SearchDirs("", func(k string) string { return env[k] }, "")
	want = []string{"/a", "/b", "/home/u/.local/share/sanddune/plugins"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("without XDG_DATA_HOME: got %v, want %v", got, want)
	}
}

func TestCandidates(t *testing.T) {
	t.Parallel()
	got := candidates("acme-big-vm")
	want := []string{"acme-big-vm", "acme-big", "acme"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestBuiltinServedFromItsBinaryBesideSanddune: a built-in runs as the
// binary sanddune-plugin-<name> beside sanddune, over the same protocol as
// any plugin binary, and is not warned about as a binary shadowing itself.
func TestBuiltinServedFromItsBinaryBesideSanddune(t *testing.T) {
	t.Parallel()
	h, logs := newHost(t, "", "alpha")
	p, c, err := h.Sandbox(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Source.Builtin() || c.Info.Version != "9.9.9-fake" {
		t.Fatalf("source %v info %+v: want the built-in", c.Source, c.Info)
	}
	want := filepath.Join(filepath.Dir(h.opts.Executable), BinaryPrefix+"alpha")
	if got := h.procs["builtin:"+BinaryPrefix+"alpha"].cmd.Path; got != want {
		t.Fatalf("the built-in ran %s, want %s", got, want)
	}
	if strings.Contains(logs.String(), "ignored") {
		t.Fatalf("the built-in's own binary was warned about:\n%s", logs)
	}
	sb, err := p.Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"echo", "hi"}}, func(l sdk.OutputLine) {
		got = append(got, string(l.Text))
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "echo hi" {
		t.Fatalf("exec output %q", got)
	}
}

func TestBinaryNeverReplacesBuiltinByName(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "alpha")
	h, logs := newHost(t, dir, "alpha")
	_, c, err := h.Sandbox(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Source.Builtin() {
		t.Fatalf("source %+v: a binary named like a built-in replaced it", c.Source)
	}
	if !strings.Contains(logs.String(), "plugin binary ignored") || !strings.Contains(logs.String(), "[WARN]") {
		t.Fatalf("the ignored binary is not warned about; log:\n%s", logs)
	}
}

func TestRequiredSourceReplacesBuiltin(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(pluginDir(t, "alpha"), BinaryPrefix+"alpha")
	h, _ := newHost(t, filepath.Dir(bin), "alpha")
	h.opts.Required = map[string]Requirement{"alpha": {Source: bin, Decl: "x.hcl:1"}}
	_, c, err := h.Sandbox(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if c.Source.Path != bin || !c.Source.Shadows {
		t.Fatalf("source %+v: want the required binary replacing the built-in", c.Source)
	}
}

func TestComponentOfMultiComponentBinary(t *testing.T) {
	t.Parallel()
	// A label "acme-vm" is served by sanddune-plugin-acme when there is no
	// sanddune-plugin-acme-vm; this fake serves only "acme", so the lookup
	// falls through to a clear not-found error after asking it.
	h, _ := newHost(t, pluginDir(t, "acme"))
	_, _, err := h.Sandbox(context.Background(), "acme-vm")
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want NotFoundError", err)
	}
}

// resolveConcurrently resolves the sandboxes names from 8 goroutines at
// once, calling each (unless nil) with every resolution.
func resolveConcurrently(t *testing.T, h *Host, each func(string, sdk.SandboxProvider, Component), names ...string) {
	t.Helper()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range names {
				p, c, err := h.Sandbox(context.Background(), n)
				if err != nil {
					t.Error(err)
				} else if each != nil {
					each(n, p, c)
				}
			}
		}()
	}
	wg.Wait()
}

func TestOneProcessPerPlugin(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginDir(t, "beta"), "alpha")
	resolveConcurrently(t, h, nil, "alpha", "beta")
	if len(h.procs) != 2 {
		t.Fatalf("%d plugin processes, want 2 (one per plugin)", len(h.procs))
	}
}

// TestBuiltinsOfOneBinaryShareOneProcess: the built-ins one binary serves
// (sanddune-plugin-builtins) run as one process of it, however many of them
// are resolved and however often; each is listed under its own name, the
// binary is no plugin of its own, and a binary beside sanddune named like
// a built-in (left by an older install) is not warned about.
func TestBuiltinsOfOneBinaryShareOneProcess(t *testing.T) {
	t.Parallel()
	bin := BinaryPrefix + "builtins"
	h, logs := newHostOf(t, "", map[string]string{"alpha": bin, "beta": bin})
	dir := filepath.Dir(h.opts.Executable)
	if err := os.Symlink(fakePlugin, filepath.Join(dir, BinaryPrefix+"alpha")); err != nil {
		t.Fatal(err)
	}
	resolveConcurrently(t, h, func(n string, p sdk.SandboxProvider, c Component) {
		if !c.Source.Builtin() || c.Source.Name != n {
			t.Errorf("%s resolved to %+v, want the built-in", n, c.Source)
		}
		if _, err := p.Create(context.Background(), sdk.CreateRequest{}); err != nil {
			t.Error(err)
		}
	}, "alpha", "beta")
	if len(h.procs) != 1 {
		t.Fatalf("%d plugin processes, want 1 (the built-ins' binary)", len(h.procs))
	}
	if got, want := h.procs["builtin:"+bin].cmd.Path, filepath.Join(dir, bin); got != want {
		t.Fatalf("the built-ins ran %s, want %s", got, want)
	}
	listsBuiltinsOnce(t, h, "alpha", "beta")
	if len(h.procs) != 1 {
		t.Fatalf("list started %d processes, want the one", len(h.procs))
	}
	_, _, err := h.Sandbox(context.Background(), "builtins")
	var nf *NotFoundError
	if !errors.As(err, &nf) || slices.Contains(nf.Known, "builtins") || !slices.Equal(nf.Known, []string{"alpha", "beta"}) {
		t.Fatalf("resolving the binary's own name: %v (known %v), want not found, knowing alpha and beta", err, nf.Known)
	}
	if strings.Contains(logs.String(), "ignored") {
		t.Fatalf("a binary beside sanddune was warned about:\n%s", logs)
	}
}

// TestSelfServesItsBuiltins: the built-ins mapped to Options.Self run as
// one process of the sanddune executable itself, started with the path of
// their binary beside it as argv[0] (the fake serves alpha and beta only
// under that name); a file of that name left beside sanddune is neither
// started nor a plugin of its own.
func TestSelfServesItsBuiltins(t *testing.T) {
	t.Parallel()
	bin := BinaryPrefix + "builtins"
	dir := t.TempDir()
	exe := filepath.Join(dir, "sanddune")
	if err := os.Symlink(fakePlugin, exe); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, bin)
	if err := os.WriteFile(stale, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := New(Options{Builtins: map[string]string{"alpha": bin, "beta": bin}, Executable: exe, Self: bin, Getenv: func(string) string { return "" }})
	t.Cleanup(h.Close)
	resolveConcurrently(t, h, func(n string, _ sdk.SandboxProvider, c Component) {
		if !c.Source.Builtin() || c.Source.Name != n {
			t.Errorf("%s resolved to %+v, want the built-in", n, c.Source)
		}
	}, "alpha", "beta")
	if len(h.procs) != 1 {
		t.Fatalf("%d plugin processes, want 1 (sanddune serving its built-ins)", len(h.procs))
	}
	if cmd := h.procs["builtin:"+bin].cmd; cmd.Path != exe || cmd.Args[0] != stale {
		t.Fatalf("the built-ins ran %s as %s, want %s as %s", cmd.Path, cmd.Args[0], exe, stale)
	}
	listsBuiltinsOnce(t, h, "alpha", "beta")
}

// listsBuiltinsOnce checks that h lists the built-ins want, each once, and
// nothing else.
func listsBuiltinsOnce(t *testing.T, h *Host, want ...string) {
	t.Helper()
	var names []string
	for _, r := range h.List(context.Background()) {
		if r.Err != nil || !r.Source.Builtin() {
			t.Fatalf("list row %+v, want built-ins only", r)
		}
		names = append(names, r.Info.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("list = %v, want %v once each", names, want)
	}
}

// TestMissingBuiltinsBinaryNamesEachBuiltin: when the binary several
// built-ins share is missing, each built-in asked for says so by its name.
func TestMissingBuiltinsBinaryNamesEachBuiltin(t *testing.T) {
	t.Parallel()
	bin := BinaryPrefix + "builtins"
	h, _ := newHostOf(t, "", map[string]string{"alpha": bin, "beta": bin})
	path := filepath.Join(filepath.Dir(h.opts.Executable), bin)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"alpha", "beta"} {
		_, _, err := h.Sandbox(context.Background(), n)
		if err == nil || !strings.Contains(err.Error(), `built-in plugin "`+n+`" is missing: sanddune starts it from `+path) {
			t.Fatalf("%s: err = %v, want it named with %s", n, err, path)
		}
	}
}

func TestCloseKillsPluginProcesses(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginDir(t, "beta"), "alpha")
	for _, n := range []string{"alpha", "beta"} {
		if _, _, err := h.Sandbox(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	var pids []int
	for _, p := range h.procs {
		pids = append(pids, p.client.ReattachConfig().Pid)
	}
	h.Close()
	h.Close() // idempotent
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("plugin process %d still alive after Close", pid)
		}
	}
}

func alive(pid int) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return false
		}
		// A zombie is dead too; its parent (this test) reaps it.
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func TestProtocolVersionMismatch(t *testing.T) {
	t.Parallel()
	dir := pluginDir(t, "future")
	h, _ := newHost(t, dir)
	_, _, err := h.Sandbox(context.Background(), "future")
	var ve *VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a VersionError", err)
	}
	msg := err.Error()
	for _, want := range []string{`"future"`, filepath.Join(dir, BinaryPrefix+"future"), "version 99", "[1]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

func TestPluginCrashMidCallNamesOperation(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginDir(t, "crashy"))
	p, _, err := h.Sandbox(context.Background(), "crashy")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {})
	if !errors.Is(err, sdk.ErrPluginShutdown) {
		t.Fatalf("err = %v, want ErrPluginShutdown", err)
	}
	if !strings.Contains(err.Error(), "crashy") || !strings.Contains(err.Error(), "Exec") {
		t.Fatalf("error %q should name the plugin and the operation", err)
	}
}

// TestDeadPluginRelaunchedOnResolve: once a plugin process died mid-call,
// the next Resolve starts the binary again and its provider answers; a
// live plugin is not restarted.
func TestDeadPluginRelaunchedOnResolve(t *testing.T) {
	t.Parallel()
	h, logs := newHost(t, pluginDir(t, "crashy"))
	p, _, err := h.Sandbox(context.Background(), "crashy")
	if err != nil {
		t.Fatal(err)
	}
	before := pids(h)
	sb, err := p.Create(context.Background(), sdk.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); !errors.Is(err, sdk.ErrPluginShutdown) {
		t.Fatalf("err = %v, want ErrPluginShutdown", err)
	}
	p2, _, err := h.Sandbox(context.Background(), "crashy")
	if err != nil {
		t.Fatalf("Resolve after the plugin died: %v", err)
	}
	if _, err := p2.Info(context.Background()); err != nil {
		t.Fatalf("the relaunched plugin does not answer: %v", err)
	}
	after := pids(h)
	if len(after) != 1 || after[0] == before[0] {
		t.Fatalf("plugin processes %v, then %v: want one new process", before, after)
	}
	if _, _, err := h.Sandbox(context.Background(), "crashy"); err != nil || !slices.Equal(pids(h), after) {
		t.Fatalf("a live plugin was restarted (%v, then %v) or failed: %v", after, pids(h), err)
	}
	if !strings.Contains(logs.String(), "plugin process died; starting it again") {
		t.Errorf("no warning about the relaunch in the logs:\n%s", logs)
	}
}

// TestStoppedNamesPluginsKilledBeforeTheyShutDown: Close stops a plugin
// that does not exit when asked (its Create still runs) with SIGKILL, and
// Stopped names its sandbox once; one that shut down is not named.
func TestStoppedNamesPluginsKilledBeforeTheyShutDown(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginDir(t, "stuck", "fine"))
	p, _, err := h.Sandbox(context.Background(), "stuck")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Sandbox(context.Background(), "fine"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	go p.Create(context.Background(), sdk.CreateRequest{HostRepoPath: dir})
	for {
		if _, err := os.Stat(filepath.Join(dir, "creating")); err == nil {
			break // the Create runs in the plugin
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.Close()
	if got := h.Stopped(); !slices.Equal(got, []string{"stuck"}) {
		t.Fatalf("Stopped = %v, want [stuck]", got)
	}
	if got := h.Stopped(); got != nil {
		t.Fatalf("Stopped names plugins twice: %v", got)
	}
}

func pids(h *Host) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for _, p := range h.procs {
		out = append(out, p.client.ReattachConfig().Pid)
	}
	return out
}

func TestNotFoundListsSearchDirs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, _ := newHost(t, dir)
	_, _, err := h.Agent(context.Background(), "nope")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "sanddune-plugin-nope") {
		t.Fatalf("err = %v", err)
	}
}

func TestListShowsBuiltinsAndBinaries(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginDir(t, "beta", "future"), "alpha")
	rows := h.List(context.Background())
	got := map[string]string{}
	for _, r := range rows {
		switch {
		case r.Err != nil:
			got[r.Source.Name] = "error"
		case r.Source.Builtin():
			got[r.Info.Name] = "built-in"
		default:
			got[r.Info.Name] = "external"
		}
	}
	want := map[string]string{"alpha": "built-in", "beta": "external", "future": "error"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestMissingBuiltinBinaryIsNamed: a sanddune installed without its
// plugin binaries says which file is missing and how to install it, and
// lists the built-in with that error.
func TestMissingBuiltinBinaryIsNamed(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, "", "alpha")
	bin := filepath.Join(filepath.Dir(h.opts.Executable), BinaryPrefix+"alpha")
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	_, _, err := h.Sandbox(context.Background(), "alpha")
	if err == nil || !strings.Contains(err.Error(), `built-in plugin "alpha" is missing`) ||
		!strings.Contains(err.Error(), bin) || !strings.Contains(err.Error(), "make install") {
		t.Fatalf("err = %v, want the missing binary named with how to install it", err)
	}
	rows := h.List(context.Background())
	if len(rows) != 1 || !rows[0].Source.Builtin() || rows[0].Err == nil {
		t.Fatalf("list = %+v, want the built-in with its error", rows)
	}
}

// TestHungPluginStartTimesOut: a wrapper script whose real plugin never
// answers the handshake fails after StartTimeout, and none of its
// processes is left behind.
func TestHungPluginStartTimesOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := "#!/bin/sh\nsleep 1000 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(filepath.Join(dir, BinaryPrefix+"hang"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, _ := newHost(t, dir)
	h.opts.StartTimeout = time.Second
	done := make(chan error, 1)
	go func() {
		_, _, err := h.Sandbox(context.Background(), "hang")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), `"hang"`) {
			t.Fatalf("err = %v, want a start error naming the plugin", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("resolving a hung plugin did not return")
	}
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("child pid: %v", err)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the plugin's child %d outlived the failed start", pid)
	}
}

// TestNonExecutablePluginIsReported: a plugin file without its execute bit
// is an error that says how to fix it, not "not installed".
func TestNonExecutablePluginIsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, BinaryPrefix+"noexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ := newHost(t, dir)
	_, _, err := h.Sandbox(context.Background(), "noexec")
	if err == nil || !strings.Contains(err.Error(), "chmod +x") {
		t.Fatalf("err = %v, want a hint to chmod +x", err)
	}
	var listed bool
	for _, r := range h.List(context.Background()) {
		listed = listed || (r.Source.Name == "noexec" && r.Err != nil)
	}
	if !listed {
		t.Fatal("plugins list does not show the non-executable plugin with its error")
	}
}
