package hooks

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/sdk"
)

// sandboxFake runs Exec with the host's sh in a directory, killing the
// process group when ctx ends, like a provider does.
type sandboxFake struct {
	dir string
	mu  sync.Mutex
	req []sdk.ExecRequest
}

func (f *sandboxFake) Info() sdk.SandboxInfo                         { return sdk.SandboxInfo{RepoPath: f.dir} }
func (f *sandboxFake) CopyIn(context.Context, string, string) error  { return nil }
func (f *sandboxFake) CopyOut(context.Context, string, string) error { return nil }
func (f *sandboxFake) Close(context.Context) error                   { return nil }

func (f *sandboxFake) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	f.mu.Lock()
	f.req = append(f.req, req)
	f.mu.Unlock()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", req.Shell)
	cmd.Dir = f.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out(sdk.OutputLine{Stream: sdk.Stdout, Text: sc.Bytes()})
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if ctx.Err() == context.DeadlineExceeded {
		return sdk.ExecResult{TimedOut: true, ExitCode: -1}, nil
	}
	if ctx.Err() != nil {
		return sdk.ExecResult{}, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return sdk.ExecResult{ExitCode: ee.ExitCode()}, nil
	}
	return sdk.ExecResult{}, err
}

func TestHostHooksSequentialInOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var lines []string
	err := RunHost(context.Background(), dir, []run.Hook{
		{Command: "echo one >> order; sleep 0.1"},
		{Command: "echo two >> order; pwd"},
	}, func(where, cmd, line string) { lines = append(lines, line) })
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "order"))
	if string(b) != "one\ntwo\n" {
		t.Fatalf("order = %q", b)
	}
	if len(lines) != 1 || lines[0] != dir {
		t.Fatalf("output lines %q, want cwd %s", lines, dir)
	}
}

func TestHostHookFailureFailsFast(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	err := RunHost(context.Background(), dir, []run.Hook{
		{Command: "echo broken >&2; exit 4"},
		{Command: "touch second"},
	}, nil)
	var he *Error
	if !errors.As(err, &he) || he.ExitCode != 4 || he.Where != Host || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "exit 4") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "second")); err == nil {
		t.Fatal("second hook ran after a failure")
	}
}

// waitGone waits until a pid no longer runs (gone or a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for range 500 {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func TestHostHookTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	err := RunHost(context.Background(), dir, []run.Hook{
		{Command: "sleep 300 & echo $! > bg.pid; wait", Timeout: 2 * time.Second}, // room to start the background process
	}, nil)
	var he *Error
	if !errors.As(err, &he) || !he.TimedOut || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
	waitGone(t, readPID(t, filepath.Join(dir, "bg.pid")))
}

func TestHostHookCancellationKillsIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("user interrupt")
	go func() {
		readPID(t, filepath.Join(dir, "bg.pid"))
		cancel(cause)
	}()
	err := RunHost(ctx, dir, []run.Hook{{Command: "sleep 300 & echo $! > bg.pid; wait"}}, nil)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v", err)
	}
	waitGone(t, readPID(t, filepath.Join(dir, "bg.pid")))
}

func TestParallelHostAndSandboxHooksFake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sb := &sandboxFake{dir: dir}
	// Each hook waits for the other's file: they only finish when run at
	// the same time.
	host := []run.Hook{{Command: "touch h; while [ ! -e s ]; do sleep 0.01; done", Timeout: 20 * time.Second}}
	box := []run.Hook{{Command: "touch s; while [ ! -e h ]; do sleep 0.01; done", Timeout: 20 * time.Second, Sudo: true}}
	if err := RunParallel(context.Background(), dir, host, sb, box, nil); err != nil {
		t.Fatal(err)
	}
	if len(sb.req) != 1 || !sb.req[0].Sudo || sb.req[0].Shell != box[0].Command || sb.req[0].Timeout != 20*time.Second {
		t.Fatalf("sandbox requests %+v", sb.req)
	}
}

func TestParallelFailureCancelsOthersFake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sb := &sandboxFake{dir: dir}
	err := RunParallel(context.Background(), dir,
		[]run.Hook{{Command: "sleep 300 & echo $! > bg.pid; wait"}},
		sb,
		[]run.Hook{{Command: "while [ ! -e bg.pid ]; do sleep 0.01; done; echo nope; exit 2"}}, nil)
	var he *Error
	if !errors.As(err, &he) || he.Where != Sandbox || he.ExitCode != 2 || !strings.Contains(he.Tail, "nope") {
		t.Fatalf("err = %v", err)
	}
	waitGone(t, readPID(t, filepath.Join(dir, "bg.pid")))
}

func TestSandboxHookTimeoutFake(t *testing.T) {
	t.Parallel()
	err := RunSandbox(context.Background(), &sandboxFake{dir: t.TempDir()}, run.Hook{Command: "sleep 5", Timeout: 50 * time.Millisecond}, nil)
	var he *Error
	if !errors.As(err, &he) || !he.TimedOut {
		t.Fatalf("err = %v", err)
	}
}
