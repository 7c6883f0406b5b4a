package local

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

func newTestSandbox(t *testing.T, env map[string]string) sdk.Sandbox {
	t.Helper()
	sb, err := New().Create(context.Background(), sdk.CreateRequest{
		RunID:  "test/run 1",
		Env:    env,
		Labels: map[string]string{sdk.LabelRun: "run-1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	return sb
}

func TestCreateLayout(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	info := sb.Info()
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(info.ID) != tmp || !strings.HasPrefix(filepath.Base(info.ID), "sanddune-local-test_run_1-") {
		t.Errorf("sandbox dir %q is not sanddune-local-<run>-* under %s", info.ID, tmp)
	}
	if info.RepoPath != filepath.Join(info.ID, "repo") || info.HomePath != filepath.Join(info.ID, "home") {
		t.Errorf("RepoPath %q, HomePath %q", info.RepoPath, info.HomePath)
	}
	entries, err := os.ReadDir(info.RepoPath)
	if err != nil || len(entries) != 0 {
		t.Errorf("repo dir: %v entries, err %v; want empty", len(entries), err)
	}
	if _, err := os.Stat(info.HomePath); err != nil {
		t.Error(err)
	}
}

func TestExecArgvRunsWithoutShell(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"echo", "a; echo b", "$HOME"}})
	if res.ExitCode != 0 || strings.Join(o.Stdout, "|") != "a; echo b $HOME" {
		t.Errorf("got exit %d, stdout %q", res.ExitCode, o.Stdout)
	}
}

func TestExecShellStreamsInOrder(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "echo one; echo two >&2; printf 'three\\nfour'; exit 3"})
	if res.ExitCode != 3 || res.TimedOut {
		t.Errorf("result %+v, want exit 3", res)
	}
	if got := strings.Join(o.Stdout, "|"); got != "one|three|four" {
		t.Errorf("stdout %q", got)
	}
	if got := strings.Join(o.Stderr, "|"); got != "two" {
		t.Errorf("stderr %q", got)
	}
}

func TestExecEnvLayers(t *testing.T) {
	t.Setenv("SANDDUNE_LOCAL_TEST_LEAK", "leaked")
	sb := newTestSandbox(t, map[string]string{"A": "create", "B": "create"})
	info := sb.Info()
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{
		Argv: []string{"sh", "-c", `echo "$HOME|$TMPDIR|$A|$B|${SANDDUNE_LOCAL_TEST_LEAK-unset}"`},
		Env:  map[string]string{"B": "exec"},
	})
	want := info.HomePath + "|" + filepath.Join(info.ID, "tmp") + "|create|exec|unset"
	if len(o.Stdout) != 1 || o.Stdout[0] != want {
		t.Errorf("got %q, want %q", o.Stdout, want)
	}
}

func TestExecUsesSandboxPATH(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	bin := filepath.Join(sb.Info().HomePath, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "sanddune-hello"), []byte("#!/bin/sh\necho hello from PATH\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"sanddune-hello"}, Env: map[string]string{"PATH": bin + ":/usr/bin:/bin"}})
	if strings.Join(o.Stdout, "|") != "hello from PATH" {
		t.Errorf("stdout %q", o.Stdout)
	}
	_, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"sanddune-no-such-command"}}, func(sdk.OutputLine) {})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing command: err %v, want exec.ErrNotFound", err)
	}
}

func TestExecCwd(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	info := sb.Info()
	if err := os.MkdirAll(filepath.Join(info.RepoPath, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]string{
		"":                     info.RepoPath,
		"sub/dir":              filepath.Join(info.RepoPath, "sub", "dir"),
		"sub/../sub":           filepath.Join(info.RepoPath, "sub"),
		info.HomePath:          info.HomePath,
		filepath.Join(info.ID): info.ID,
	} {
		_, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"pwd", "-P"}, Cwd: cwd})
		if strings.Join(o.Stdout, "") != want {
			t.Errorf("cwd %q: pwd %q, want %q", cwd, o.Stdout, want)
		}
	}
}

func TestExecCwdEscapeRejected(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(sb.Info().RepoPath, "link")); err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{"../..", "/", outside, "link", "link/.", "../../" + filepath.Base(outside)} {
		ran := false
		_, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}, Cwd: cwd}, func(sdk.OutputLine) { ran = true })
		if !errors.Is(err, sdk.ErrConfinement) || ran {
			t.Errorf("cwd %q: err %v, want sdk.ErrConfinement", cwd, err)
		}
	}
}

func TestExecStdin(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("hello\nworld")})
	if strings.Join(o.Stdout, "|") != "hello|world" {
		t.Errorf("stdout %q", o.Stdout)
	}
	// nil stdin: cat sees EOF at once.
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"cat"}})
	if res.ExitCode != 0 || len(o.Stdout) != 0 {
		t.Errorf("nil stdin: %+v %q", res, o.Stdout)
	}
	// stdin the command never reads does not block it.
	res, _ = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"true"}, Stdin: bytes.Repeat([]byte("x"), 4<<20)})
	if res.ExitCode != 0 {
		t.Errorf("unread stdin: %+v", res)
	}
}

func TestExecLongLineInPieces(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	n := 2*sdk.MaxLineBytes + 10
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "head -c " + strconv.Itoa(n) + " /dev/zero | tr '\\0' a; echo; echo short"})
	var sizes []int
	var partial []bool
	for _, p := range o.Pieces {
		sizes = append(sizes, len(p.Text))
		partial = append(partial, p.Partial)
	}
	wantSizes := []int{sdk.MaxLineBytes, sdk.MaxLineBytes, 10, 5}
	wantPartial := []bool{true, true, false, false}
	if !equal(sizes, wantSizes) || !equal(partial, wantPartial) {
		t.Errorf("pieces %v partial %v, want %v %v", sizes, partial, wantSizes, wantPartial)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExecRejectsBadRequests(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	for name, req := range map[string]sdk.ExecRequest{
		"sudo":  {Argv: []string{"true"}, Sudo: true},
		"both":  {Argv: []string{"true"}, Shell: "true"},
		"empty": {},
	} {
		if _, err := sb.Exec(context.Background(), req, func(sdk.OutputLine) {}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// treeScript starts a background grandchild, prints its pid, and waits.
const treeScript = "sleep 100 & echo $!; sleep 100"

func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: treeScript, Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.ExitCode == 0 {
		t.Errorf("result %+v, want timed out", res)
	}
	kittest.WaitGone(t, pidFrom(t, o))
}

func TestExecCancelKillsProcessGroup(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pids := make(chan int, 1)
	res, err := sb.Exec(ctx, sdk.ExecRequest{Shell: treeScript}, func(l sdk.OutputLine) {
		pid, _ := strconv.Atoi(string(l.Text))
		pids <- pid
		cancel()
	})
	if !errors.Is(err, context.Canceled) || res.TimedOut {
		t.Errorf("Exec: %+v, %v; want context.Canceled", res, err)
	}
	kittest.WaitGone(t, <-pids)
}

func TestExecBackgroundJobEndsWithCommand(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	// The background sleep holds stdout: Exec still returns when sh exits.
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "sleep 100 & echo $!"})
	if res.ExitCode != 0 {
		t.Errorf("result %+v", res)
	}
	kittest.WaitGone(t, pidFrom(t, o))
}

func TestCloseKillsRunningCommand(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	pids := make(chan int, 1)
	errs := make(chan error, 1)
	go func() {
		_, err := sb.Exec(context.Background(), sdk.ExecRequest{Shell: treeScript}, func(l sdk.OutputLine) {
			pid, _ := strconv.Atoi(string(l.Text))
			pids <- pid
		})
		errs <- err
	}()
	pid := <-pids
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err == nil {
		t.Error("Exec interrupted by Close returned no error")
	}
	kittest.WaitGone(t, pid)
}

func pidFrom(t *testing.T, o *kittest.Output) int {
	t.Helper()
	if len(o.Stdout) == 0 {
		t.Fatal("no pid printed")
	}
	pid, err := strconv.Atoi(o.Stdout[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestCopyInFilesAndDirectories(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	host := t.TempDir()
	kittest.WriteFile(t, filepath.Join(host, "src", "run.sh"), "#!/bin/sh\n", 0o755)
	kittest.WriteFile(t, filepath.Join(host, "src", "nested", "secret"), "s", 0o600)
	if err := os.Symlink("run.sh", filepath.Join(host, "src", "link")); err != nil {
		t.Fatal(err)
	}
	kittest.WriteFile(t, filepath.Join(host, "one.txt"), "one", 0o644)
	ctx := context.Background()

	if err := sb.CopyIn(ctx, filepath.Join(host, "src"), "dir"); err != nil {
		t.Fatal(err)
	}
	if err := sb.CopyIn(ctx, filepath.Join(host, "one.txt"), "a/b/one.txt"); err != nil {
		t.Fatal(err)
	}
	repo := sb.Info().RepoPath
	kittest.CheckFile(t, filepath.Join(repo, "dir", "run.sh"), "#!/bin/sh\n", 0o755)
	kittest.CheckFile(t, filepath.Join(repo, "dir", "nested", "secret"), "s", 0o600)
	kittest.CheckFile(t, filepath.Join(repo, "a", "b", "one.txt"), "one", 0o644)
	if target, err := os.Readlink(filepath.Join(repo, "dir", "link")); err != nil || target != "run.sh" {
		t.Errorf("symlink: %q %v", target, err)
	}

	// CopyOut brings it back.
	back := filepath.Join(t.TempDir(), "back")
	if err := sb.CopyOut(ctx, "dir", back); err != nil {
		t.Fatal(err)
	}
	kittest.CheckFile(t, filepath.Join(back, "run.sh"), "#!/bin/sh\n", 0o755)
	kittest.CheckFile(t, filepath.Join(back, "nested", "secret"), "s", 0o600)
	if err := sb.CopyOut(ctx, filepath.Join(repo, "a", "b", "one.txt"), filepath.Join(back, "one")); err != nil {
		t.Fatal(err)
	}
	kittest.CheckFile(t, filepath.Join(back, "one"), "one", 0o644)
}

func TestCopyTraversalRejected(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	host := t.TempDir()
	kittest.WriteFile(t, filepath.Join(host, "f"), "x", 0o644)
	outside := t.TempDir()
	for _, p := range []string{"../../escape", "../../../" + filepath.Base(outside) + "/f", filepath.Join(outside, "f"), "/etc/sanddune-escape"} {
		if err := sb.CopyIn(context.Background(), filepath.Join(host, "f"), p); !errors.Is(err, sdk.ErrConfinement) {
			t.Errorf("CopyIn to %q: err %v, want sdk.ErrConfinement", p, err)
		}
		if err := sb.CopyOut(context.Background(), p, filepath.Join(host, "out")); !errors.Is(err, sdk.ErrConfinement) {
			t.Errorf("CopyOut from %q: err %v, want sdk.ErrConfinement", p, err)
		}
	}
	assertEmpty(t, outside)
}

func TestCopySymlinkEscapeRejected(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	repo := sb.Info().RepoPath
	host := t.TempDir()
	kittest.WriteFile(t, filepath.Join(host, "f"), "new", 0o644)
	kittest.WriteFile(t, filepath.Join(host, "tree", "sub", "f"), "new", 0o644)
	outside := t.TempDir()
	kittest.WriteFile(t, filepath.Join(outside, "victim"), "old", 0o644)
	for name, target := range map[string]string{
		"dirlink":  outside,
		"filelink": filepath.Join(outside, "victim"),
		"dangling": filepath.Join(outside, "created"),
	} {
		if err := os.Symlink(target, filepath.Join(repo, name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	// Through a symlinked directory: rejected.
	for _, p := range []string{"dirlink/f", "dirlink/new/f", "dangling/f"} {
		if err := sb.CopyIn(ctx, filepath.Join(host, "f"), p); !errors.Is(err, sdk.ErrConfinement) {
			t.Errorf("CopyIn to %q: err %v, want sdk.ErrConfinement", p, err)
		}
	}
	if err := sb.CopyOut(ctx, "dirlink/victim", filepath.Join(host, "stolen")); !errors.Is(err, sdk.ErrConfinement) {
		t.Errorf("CopyOut through symlink: err %v, want sdk.ErrConfinement", err)
	}
	// Onto a symlink: the link is replaced, never followed.
	for _, p := range []string{"filelink", "dangling"} {
		if err := sb.CopyIn(ctx, filepath.Join(host, "f"), p); err != nil {
			t.Errorf("CopyIn onto symlink %q: %v", p, err)
		}
		kittest.CheckFile(t, filepath.Join(repo, p), "new", 0o644)
	}
	// A symlink inside a directory being merged into is replaced too.
	if err := os.MkdirAll(filepath.Join(repo, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, "tree", "sub")); err != nil {
		t.Fatal(err)
	}
	if err := sb.CopyIn(ctx, filepath.Join(host, "tree"), "tree"); err != nil {
		t.Fatal(err)
	}
	kittest.CheckFile(t, filepath.Join(repo, "tree", "sub", "f"), "new", 0o644)
	kittest.CheckFile(t, filepath.Join(outside, "victim"), "old", 0o644)
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside dir has %d entries, want only victim", len(entries))
	}
}

func TestCloseRemovesEverythingIdempotently(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	info := sb.Info()
	// A read-only directory tree (like a Go module cache) does not stop removal.
	ro := filepath.Join(info.HomePath, "go", "pkg", "mod", "x")
	kittest.WriteFile(t, filepath.Join(ro, "f"), "x", 0o444)
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		if err := sb.Close(ctx); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if _, err := os.Lstat(info.ID); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sandbox dir still there: %v", err)
	}
	if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); err == nil {
		t.Error("Exec after Close: no error")
	}
	if err := sb.CopyIn(ctx, info.ID, "x"); err == nil {
		t.Error("CopyIn after Close: no error")
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	sb := newTestSandbox(t, nil)
	p := New().(*Provider)
	ctx := context.Background()
	res, err := p.ListResources(ctx, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.Info().ID
	found := false
	for _, r := range res {
		if r.ID == id {
			found = r.Labels[sdk.LabelRun] == "run-1"
		}
	}
	if !found {
		t.Fatalf("ListResources %+v lacks %s with its labels", res, id)
	}
	if err := p.RemoveResource(ctx, sdk.Config{}, t.TempDir()); err == nil {
		t.Error("RemoveResource of a non-sandbox dir: no error")
	}
	for range 2 {
		if err := p.RemoveResource(ctx, sdk.Config{}, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(id); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir still there: %v", err)
	}
}

func TestPreflightAndInfo(t *testing.T) {
	t.Parallel()
	p := New()
	ctx := context.Background()
	if err := p.Preflight(ctx, sdk.PreflightRequest{}); err != nil {
		t.Fatal(err)
	}
	info, err := p.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Sandbox == nil || info.Sandbox.Contract != sdk.ContractIsolated || info.Sandbox.Sudo {
		t.Errorf("info %+v", info)
	}
	if !strings.Contains(info.Description, "NOT a security boundary") {
		t.Errorf("description %q does not warn", info.Description)
	}
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%s is not empty: %d entries", dir, len(entries))
	}
}

// TestOverGRPC drives the provider through the real plugin protocol.
func TestOverGRPC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := plugintest.Sandbox(t, New())
	info, err := p.Info(ctx)
	if err != nil || info.Sandbox == nil || info.Sandbox.Contract != sdk.ContractIsolated {
		t.Fatalf("Info: %+v %v", info, err)
	}
	sb, err := p.Create(ctx, sdk.CreateRequest{RunID: "grpc", Env: map[string]string{"A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := sb.Info().ID
	defer sb.Close(ctx)

	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `cat; echo "A=$A"; echo err >&2; exit 5`, Stdin: []byte("in\n")})
	if res.ExitCode != 5 || strings.Join(o.Stdout, "|") != "in|A=1" || strings.Join(o.Stderr, "|") != "err" {
		t.Errorf("exec: %+v stdout %q stderr %q", res, o.Stdout, o.Stderr)
	}
	res, o = kittest.Exec(t, sb, sdk.ExecRequest{Shell: treeScript, Timeout: 300 * time.Millisecond})
	if !res.TimedOut {
		t.Errorf("timeout: %+v", res)
	}
	kittest.WaitGone(t, pidFrom(t, o))

	cctx, cancel := context.WithCancel(ctx)
	pids := make(chan int, 1)
	_, err = sb.Exec(cctx, sdk.ExecRequest{Shell: treeScript}, func(l sdk.OutputLine) {
		pid, _ := strconv.Atoi(string(l.Text))
		pids <- pid
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: err %v", err)
	}
	kittest.WaitGone(t, <-pids)

	if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"true"}, Cwd: "/"}, func(sdk.OutputLine) {}); err == nil || !strings.Contains(err.Error(), "path confinement") {
		t.Errorf("cwd escape over gRPC: %v", err)
	}
	for range 2 {
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir still there: %v", err)
	}
}

// TestEnvAttribute: a local block takes env like every sandbox provider
// (it was once an "Unsupported argument"), checks its keys, and
// describes it to the host through gRPC as the sandbox env layer.
func TestEnvAttribute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := plugintest.Sandbox(t, New())
	schema, err := p.ConfigSchema(ctx)
	if err != nil || len(schema.Attributes) != 1 || schema.Attributes[0].Name != "env" {
		t.Fatalf("schema %+v, %v: want an env attribute", schema, err)
	}
	cfg := func(env map[string]string) sdk.Config {
		vals := map[string]cty.Value{}
		for k, v := range env {
			vals[k] = cty.StringVal(v)
		}
		return sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"env": cty.MapVal(vals)})}
	}
	if ds, err := p.Configure(ctx, cfg(map[string]string{"BAD KEY": "x"})); err != nil || !ds.HasErrors() || ds[0].Attribute != "env" {
		t.Errorf("Configure with a bad key: %v, %v", ds, err)
	}
	d, err := p.Describe(ctx, cfg(map[string]string{"GREETING": "hi"}))
	if err != nil || d.Env["GREETING"] != "hi" {
		t.Errorf("Describe = %+v, %v", d, err)
	}
}
