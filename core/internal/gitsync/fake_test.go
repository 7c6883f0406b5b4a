package gitsync

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

// fakeSandbox is an isolated sdk.Sandbox made of a temp directory: its own
// repo and home, commands run with os/exec, copies with cp.
type fakeSandbox struct {
	dir  string
	info sdk.SandboxInfo
	env  []string
}

func newFakeSandbox(t *testing.T) *fakeSandbox {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"repo", "home"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(dir, "home")
	return &fakeSandbox{
		dir:  dir,
		info: sdk.SandboxInfo{ID: dir, RepoPath: filepath.Join(dir, "repo"), HomePath: home},
		// Its own git world: no identity, no global config of the host.
		env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
			"GIT_CONFIG_NOSYSTEM=1"},
	}
}

func (f *fakeSandbox) Info() sdk.SandboxInfo { return f.info }

func (f *fakeSandbox) inside(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.info.RepoPath, p)
	}
	if !strings.HasPrefix(filepath.Clean(p)+"/", f.dir+"/") {
		panic("path escapes the fake sandbox: " + p)
	}
	return p
}

func (f *fakeSandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir = f.inside(req.Cwd)
	cmd.Env = append([]string(nil), f.env...)
	for k, v := range req.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return sdk.ExecResult{}, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	pump := func(r io.Reader, s sdk.Stream) {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			mu.Lock()
			out(sdk.OutputLine{Stream: s, Text: sc.Bytes()})
			mu.Unlock()
		}
	}
	wg.Add(2)
	go pump(stdout, sdk.Stdout)
	go pump(stderr, sdk.Stderr)
	wg.Wait()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return sdk.ExecResult{ExitCode: ee.ExitCode()}, nil
	}
	return sdk.ExecResult{}, err
}

func (f *fakeSandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	return exec.CommandContext(ctx, "cp", "-a", hostPath, f.inside(sandboxPath)).Run()
}

func (f *fakeSandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	return exec.CommandContext(ctx, "cp", "-a", f.inside(sandboxPath), hostPath).Run()
}

func (f *fakeSandbox) Close(context.Context) error { return nil }

// sh runs a shell script in the fake sandbox's repo as the agent would,
// with the agent's identity in env.
func (f *fakeSandbox) sh(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = f.info.RepoPath
	cmd.Env = append(append([]string(nil), f.env...), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox script failed: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
