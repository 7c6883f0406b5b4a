package sandboxkit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/internal/testkit"
)

// realTempDir is a t.TempDir with symlinks resolved, usable as a root.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a/b", true}, {"/a/b/c", "/a/b", true}, {"/a/bc", "/a/b", false},
		{"/a", "/a/b", false}, {"/anything", "/", true},
	} {
		if got := Within(tc.p, tc.dir); got != tc.want {
			t.Errorf("Within(%q, %q) = %v", tc.p, tc.dir, got)
		}
	}
}

// TestSandboxPathKeepsRelativePathsInTheRepo: a
// relative path, a cwd or a copy target, never leaves the repository.
func TestSandboxPathKeepsRelativePathsInTheRepo(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"":          "/w/repo",
		".":         "/w/repo",
		"a/../b":    "/w/repo/b",
		"/w/home/x": "/w/home/x",
		"/tmp/../x": "/x",
	} {
		if got, err := SandboxPath(p, "/w/repo"); err != nil || got != want {
			t.Errorf("SandboxPath(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	for _, p := range []string{"..", "../escape.txt", "a/../../x", "../repo2"} {
		if got, err := SandboxPath(p, "/w/repo"); !errors.Is(err, sdk.ErrConfinement) {
			t.Errorf("SandboxPath(%q) = %q, %v; want sdk.ErrConfinement", p, got, err)
		}
	}
}

func TestAreaDirConfines(t *testing.T) {
	t.Parallel()
	root, other := realTempDir(t), realTempDir(t)
	testkit.WriteFile(t, filepath.Join(root, "d", "f"), "x", 0o644)
	symlink(t, "d", filepath.Join(root, "inner"))
	symlink(t, other, filepath.Join(root, "out"))
	a := Area{root}
	for _, p := range []string{root, filepath.Join(root, "d"), filepath.Join(root, "inner")} {
		if err := a.Dir(p); err != nil {
			t.Errorf("Dir(%q): %v", p, err)
		}
	}
	for _, p := range []string{filepath.Join(root, ".."), other, filepath.Join(root, "out"), "relative", "/"} {
		if err := a.Dir(p); !errors.Is(err, sdk.ErrConfinement) {
			t.Errorf("Dir(%q) = %v; want sdk.ErrConfinement", p, err)
		}
	}
	if err := a.Dir(filepath.Join(root, "d", "f")); err == nil || errors.Is(err, sdk.ErrConfinement) {
		t.Errorf("Dir(file) = %v; want a not-a-directory error", err)
	}
	// A second directory admits what it holds.
	if err := (Area{root, other}).Dir(other); err != nil {
		t.Errorf("two dirs: %v", err)
	}
}

// CopyIn and CopyOut never pass through a symlink that leads out of the
// area, at the target or on the way there.
func TestAreaCopiesConfine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, other, host := realTempDir(t), realTempDir(t), t.TempDir()
	testkit.WriteFile(t, filepath.Join(host, "f"), "new", 0o644)
	testkit.WriteFile(t, filepath.Join(other, "secret"), "s", 0o600)
	testkit.WriteFile(t, filepath.Join(root, "d", "g"), "g", 0o644)
	symlink(t, "d", filepath.Join(root, "dlink"))
	symlink(t, other, filepath.Join(root, "out"))
	symlink(t, filepath.Join(other, "secret"), filepath.Join(root, "outfile"))
	a := Area{root}

	if err := a.CopyIn(ctx, filepath.Join(host, "f"), filepath.Join(root, "dlink", "new", "f")); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFile(t, filepath.Join(root, "d", "new", "f"), "new", 0o644)
	for _, p := range []string{root, filepath.Join(root, "..", "x"), filepath.Join(other, "x"), filepath.Join(root, "out", "x"), filepath.Join(root, "out", "new", "x"), "x"} {
		if err := a.CopyIn(ctx, filepath.Join(host, "f"), p); !errors.Is(err, sdk.ErrConfinement) {
			t.Errorf("CopyIn to %q = %v; want sdk.ErrConfinement", p, err)
		}
	}
	if entries, _ := os.ReadDir(other); len(entries) != 1 {
		t.Errorf("a copy wrote into the outside dir: %d entries", len(entries))
	}

	if err := a.CopyOut(ctx, filepath.Join(root, "dlink", "g"), filepath.Join(host, "out", "g")); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFile(t, filepath.Join(host, "out", "g"), "g", 0o644)
	for _, p := range []string{filepath.Join(root, "out", "secret"), filepath.Join(root, "outfile"), other} {
		if err := a.CopyOut(ctx, p, filepath.Join(host, "leak")); !errors.Is(err, sdk.ErrConfinement) {
			t.Errorf("CopyOut of %q = %v; want sdk.ErrConfinement", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(host, "leak")); err == nil {
		t.Error("a refused CopyOut left a file behind")
	}
}

func TestCopyTreeKeepsModesAndSymlinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, area := realTempDir(t), realTempDir(t)
	dst := filepath.Join(area, "a", "dst")
	testkit.WriteFile(t, filepath.Join(src, "run.sh"), "#!/bin/sh\n", 0o755)
	testkit.WriteFile(t, filepath.Join(src, "nested", "secret"), "s", 0o600)
	symlink(t, "run.sh", filepath.Join(src, "link"))
	if err := os.Chmod(filepath.Join(src, "nested"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := (Area{area}).CopyIn(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFile(t, filepath.Join(dst, "run.sh"), "#!/bin/sh\n", 0o755)
	testkit.CheckFile(t, filepath.Join(dst, "nested", "secret"), "s", 0o600)
	if fi, err := os.Stat(filepath.Join(dst, "nested")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("dir mode: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "run.sh" {
		t.Errorf("symlink: %q %v", l, err)
	}
	// A top-level symlink is copied as a symlink too: a link to a host file
	// outside the tree (say .env -> ~/.aws/credentials) does not bring the
	// file's content along.
	secret := filepath.Join(t.TempDir(), "secret")
	testkit.WriteFile(t, secret, "s3cr3t", 0o600)
	symlink(t, secret, filepath.Join(src, "top"))
	if err := (Area{area}).CopyIn(ctx, filepath.Join(src, "top"), filepath.Join(dst, "top")); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "top")); err != nil || l != secret {
		t.Errorf("top-level symlink: %q %v, want a link to %s", l, err, secret)
	}
	if err := (Area{src}).CopyIn(ctx, src, filepath.Join(src, "nested", "self")); err == nil {
		t.Error("copy of a directory into itself accepted")
	}
}

// CopyIn replaces symlinks at the destination, even inside a directory it
// merges into, and never writes through them.
func TestCopyNeverWritesThroughSymlinks(t *testing.T) {
	t.Parallel()
	src, outside := t.TempDir(), t.TempDir()
	testkit.WriteFile(t, filepath.Join(src, "tree", "sub", "f"), "new", 0o644)
	testkit.WriteFile(t, filepath.Join(outside, "victim"), "old", 0o644)
	// Each case plants a symlink to outside at or below the destination.
	for _, tc := range []struct{ link, target, from, to, want string }{
		{"x", "victim", "tree/sub/f", "x", "x"},
		{"x", "missing", "tree/sub/f", "x", "x"},
		{"tree/sub", ".", "tree", "tree", "tree/sub/f"},
	} {
		dst := realTempDir(t)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, tc.link)), 0o755); err != nil {
			t.Fatal(err)
		}
		symlink(t, filepath.Join(outside, tc.target), filepath.Join(dst, tc.link))
		if err := (Area{dst}).CopyIn(context.Background(), filepath.Join(src, tc.from), filepath.Join(dst, tc.to)); err != nil {
			t.Errorf("%+v: %v", tc, err)
			continue
		}
		testkit.CheckFile(t, filepath.Join(dst, tc.want), "new", 0o644)
	}
	testkit.CheckFile(t, filepath.Join(outside, "victim"), "old", 0o644)
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside dir has %d entries, want only victim", len(entries))
	}
}

func TestArgv(t *testing.T) {
	t.Parallel()
	if argv, err := Argv(sdk.ExecRequest{Shell: "echo hi"}, "sh"); err != nil || strings.Join(argv, " ") != "sh -c echo hi" {
		t.Errorf("shell: %q %v", argv, err)
	}
	if argv, err := Argv(sdk.ExecRequest{Argv: []string{"a", "b"}}, "sh"); err != nil || strings.Join(argv, " ") != "a b" {
		t.Errorf("argv: %q %v", argv, err)
	}
	for _, req := range []sdk.ExecRequest{{}, {Argv: []string{""}}, {Argv: []string{"a"}, Shell: "b"}} {
		if _, err := Argv(req, "sh"); err == nil {
			t.Errorf("%+v accepted", req)
		}
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("SANDBOXKIT_TEST_SET", "v")
	t.Setenv("SANDBOXKIT_TEST_EMPTY", "")
	env := MergeEnv(HostEnv("SANDBOXKIT_TEST_SET", "SANDBOXKIT_TEST_EMPTY", "SANDBOXKIT_TEST_UNSET"), map[string]string{"B": "1", "A": "1"}, map[string]string{"B": "2"})
	if got := strings.Join(EnvList(env), " "); got != "A=1 B=2 SANDBOXKIT_TEST_SET=v" {
		t.Errorf("env %q", got)
	}
}

func shellCommand(script string) Command {
	return Command{Argv: []string{"sh", "-c", script}, Env: map[string]string{"PATH": os.Getenv("PATH")}}
}

func TestRunStreamsAndExits(t *testing.T) {
	t.Parallel()
	var r Runner
	var mu sync.Mutex
	lines := map[sdk.Stream][]string{}
	out := func(l sdk.OutputLine) {
		mu.Lock()
		defer mu.Unlock()
		lines[l.Stream] = append(lines[l.Stream], string(l.Text))
	}
	c := shellCommand(`cat; echo "$A" >&2; pwd; exit 3`)
	c.Stdin, c.Env["A"], c.Dir = []byte("in\n"), "a", realTempDir(t)
	res, err := r.Run(context.Background(), c, out)
	if err != nil || res.ExitCode != 3 || res.TimedOut {
		t.Fatalf("%+v %v", res, err)
	}
	if got := strings.Join(lines[sdk.Stdout], "|"); got != "in|"+c.Dir {
		t.Errorf("stdout %q", got)
	}
	if got := strings.Join(lines[sdk.Stderr], "|"); got != "a" {
		t.Errorf("stderr %q", got)
	}
	if res, err := r.Run(context.Background(), shellCommand("kill -9 $$"), func(sdk.OutputLine) {}); err != nil || res.ExitCode != 137 {
		t.Errorf("signal: %+v %v", res, err)
	}
	if _, err := r.Run(context.Background(), Command{Argv: []string{"sandboxkit-no-such-command"}, Env: map[string]string{"PATH": "/nonexistent"}}, func(sdk.OutputLine) {}); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing command: %v", err)
	}
}

// treeScript starts a background grandchild, prints its pid and waits.
const treeScript = "sleep 100 & echo $!; sleep 100"

// pidOut returns an OutputFunc that sends the first line, a pid, to pids.
func pidOut(pids chan<- int, then func()) sdk.OutputFunc {
	var once sync.Once
	return func(l sdk.OutputLine) {
		once.Do(func() {
			pid, _ := strconv.Atoi(string(l.Text))
			pids <- pid
			if then != nil {
				then()
			}
		})
	}
}

func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	var r Runner
	c := shellCommand(treeScript)
	c.Timeout = 300 * time.Millisecond
	pids := make(chan int, 1)
	res, err := r.Run(context.Background(), c, pidOut(pids, nil))
	if err != nil || !res.TimedOut || res.ExitCode != 137 {
		t.Errorf("%+v %v; want timed out, killed", res, err)
	}
	testkit.WaitGone(t, <-pids)
}

func TestRunCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	var r Runner
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The grandchild ignores SIGTERM: the group kill ends it.
	c := shellCommand(`(trap '' TERM; sleep 100) & echo $!; wait`)
	c.KillGrace = 100 * time.Millisecond
	pids := make(chan int, 1)
	res, err := r.Run(ctx, c, pidOut(pids, cancel))
	if !errors.Is(err, context.Canceled) || res.TimedOut {
		t.Errorf("%+v %v; want context.Canceled", res, err)
	}
	testkit.WaitGone(t, <-pids)
}

func TestRunBackgroundJobEndsUnlessLinger(t *testing.T) {
	t.Parallel()
	var r Runner
	pids := make(chan int, 1)
	if res, err := r.Run(context.Background(), shellCommand("sleep 100 & echo $!"), pidOut(pids, nil)); err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	testkit.WaitGone(t, <-pids)

	c := shellCommand("sleep 100 >/dev/null 2>&1 & echo $!")
	c.Linger = true
	if _, err := r.Run(context.Background(), c, pidOut(pids, nil)); err != nil {
		t.Fatal(err)
	}
	pid := <-pids
	if syscall.Kill(pid, 0) != nil {
		t.Error("lingering job was killed")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func TestRunnerCloseKillsRunningCommands(t *testing.T) {
	t.Parallel()
	var r Runner
	pids := make(chan int, 1)
	errs := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), shellCommand(treeScript), pidOut(pids, nil))
		errs <- err
	}()
	pid := <-pids
	if r.Close() {
		t.Error("first Close reported already closed")
	}
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; !errors.Is(err, ErrClosed) {
		t.Errorf("interrupted Run: %v, want ErrClosed", err)
	}
	testkit.WaitGone(t, pid)
	if !r.Close() || !r.Closed() {
		t.Error("second Close did not report already closed")
	}
	if _, err := r.Run(context.Background(), shellCommand("true"), func(sdk.OutputLine) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
}

func TestTempDirs(t *testing.T) {
	t.Setenv("TMPDIR", realTempDir(t))
	td := TempDirs{Prefix: "sandboxkit-test-", LabelsFile: "labels.json"}
	if err := td.Check(); err != nil {
		t.Fatal(err)
	}
	dir, err := td.Create("run-", map[string]string{sdk.LabelRun: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := td.Create("", nil); err != nil { // unlabelled: not listed
		t.Fatal(err)
	}
	res, err := td.List()
	if err != nil || len(res) != 1 || res[0].ID != dir || res[0].Labels[sdk.LabelRun] != "r1" {
		t.Fatalf("List: %+v %v", res, err)
	}
	ro := filepath.Join(dir, "ro")
	testkit.WriteFile(t, filepath.Join(ro, "f"), "x", 0o444)
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{t.TempDir(), "/etc", filepath.Join(os.TempDir(), "other")} {
		if err := td.Remove(bad); err == nil {
			t.Errorf("Remove(%q) accepted", bad)
		}
	}
	if err := td.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir left: %v", err)
	}
	if err := td.Remove(dir); err != nil {
		t.Errorf("Remove of a removed dir: %v", err)
	}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	v := cty.ObjectVal(map[string]cty.Value{
		"env":  cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1"), "B=C": cty.StringVal("2")}),
		"n":    cty.NumberFloatVal(1.5),
		"list": cty.NullVal(cty.List(cty.String)),
	})
	var d Decoder
	env := d.Env(v, "env")
	if _, ok := d.Int(v, "n"); ok {
		t.Error("1.5 decoded as an int")
	}
	if d.StringList(v, "list") != nil || d.String(v, "missing") != "" {
		t.Error("unset attributes decoded")
	}
	if env["A"] != "1" {
		t.Errorf("decoded env %v", env)
	}
	var got []string
	for _, diag := range d.Diags {
		got = append(got, diag.Attribute)
	}
	if want := "env n"; strings.Join(got, " ") != want {
		t.Errorf("diagnostics on %q, want %q", got, want)
	}
}
