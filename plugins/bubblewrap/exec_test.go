package bubblewrap

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

// execMany runs n copies of req in sb, parallel at a time, and returns a
// description of every Exec that failed or exited non-zero.
func execMany(sb *sandbox, n, parallel int, req sdk.ExecRequest) []string {
	var next atomic.Int64
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				o := &kittest.Output{}
				res, err := sb.Exec(context.Background(), req, o.Add)
				if err != nil || res.ExitCode != 0 {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("exit %d, err %v, stderr %q", res.ExitCode, err, o.Stderr))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return failed
}

func checkNoFailures(t *testing.T, n int, failed []string) {
	t.Helper()
	if len(failed) > 0 {
		t.Fatalf("%d of %d execs failed, e.g.:\n%s", len(failed), n, strings.Join(failed[:min(len(failed), 5)], "\n"))
	}
}

// The command of an Exec must carry no parent-death signal: bwrap sets it
// after joining the keeper's PID namespace through an intermediate
// process, and that process's exit, late under load, then SIGKILLed the
// command (exit 137 in about 1 Exec in 1,000).
func TestExecHasNoParentDeathSignal(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed: cannot read the parent-death signal")
	}
	sb, _ := create(t, cfgOf(nil), nil)
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"setpriv", "--dump"}})
	if res.ExitCode != 0 || !strings.Contains(strings.Join(o.Stdout, "\n"), "Parent death signal: [none]") {
		t.Fatalf("got %+v %q %q", res, o.Stdout, o.Stderr)
	}
}

// Thousands of trivial Execs, 8 at a time, all succeed: spurious kills
// (exit 137) and setup failures show up here.
func TestExecStress(t *testing.T) {
	requireBwrap(t)
	n := 3000
	if testing.Short() {
		n = 300
	}
	sb, _ := create(t, cfgOf(nil), nil)
	marker := "SANDDUNE_TEST_MARK=" + randomHex()
	k, v, _ := strings.Cut(marker, "=")
	checkNoFailures(t, n, execMany(sb, n, 8, sdk.ExecRequest{Argv: []string{"true"}, Env: map[string]string{k: v}}))
	if left := markedProcesses(marker); len(left) > 0 {
		t.Fatalf("processes left: %q", left)
	}
}

// Mounts that come and go under a shared host mount (as dockerd's do under
// /var/lib/docker) race with bwrap remounting the host root read-only;
// Exec starts bwrap again instead of failing.
func TestExecWhileHostMountsChange(t *testing.T) {
	requireBwrap(t)
	churnHostMounts(t)
	sb, _ := create(t, cfgOf(nil), nil)
	n := 1000
	checkNoFailures(t, n, execMany(sb, n, 4, sdk.ExecRequest{Argv: []string{"true"}}))
}

// The same race hits the keeper every Create starts: Create starts it
// again instead of failing ("bwrap keeper did not start its command").
func TestCreateWhileHostMountsChange(t *testing.T) {
	requireBwrap(t)
	churnHostMounts(t)
	for range 100 {
		k, err := startKeeper("bwrap")
		if err != nil {
			t.Fatal(err)
		}
		k.stop()
	}
}

// churnHostMounts mounts and unmounts tmpfs under a shared host mount of
// its own until the test ends.
func churnHostMounts(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "sanddune-mounts-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := syscall.Mount(base, base, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot create host mounts here (needs root): %v", err)
	}
	t.Cleanup(func() { must(t, syscall.Unmount(base, syscall.MNT_DETACH)) })
	must(t, syscall.Mount("", base, "", syscall.MS_SHARED, ""))

	stop := make(chan struct{})
	var churn sync.WaitGroup
	t.Cleanup(func() { close(stop); churn.Wait() })
	for i := range 2 {
		dir := filepath.Join(base, fmt.Sprint(i))
		must(t, os.Mkdir(dir, 0o755))
		churn.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := syscall.Mount("sanddune-test", dir, "tmpfs", 0, ""); err != nil {
					t.Errorf("mount: %v", err)
					return
				}
				if err := syscall.Unmount(dir, 0); err != nil {
					t.Errorf("unmount: %v", err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// Hide entries follow the host: a hidden path that disappears after
// Create (dockerd stopped and removed its socket) breaks no Exec, and one
// that appears after Create (dockerd started) is hidden.
func TestHideFollowsTheHost(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	// Sandbox /tmp is private anyway: use /var/tmp so that the paths are visible unless hidden.
	base, err := os.MkdirTemp("/var/tmp", "sanddune-hide-")
	must(t, err)
	defer os.RemoveAll(base)
	sock, dir, later := filepath.Join(base, "docker.sock"), filepath.Join(base, "dir"), filepath.Join(base, "later")
	must(t, os.WriteFile(sock, []byte("secret\n"), 0o600))
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "key"), []byte("secret\n"), 0o600))
	sb, _ := create(t, cfgOf(map[string]cty.Value{"hide": cty.ListVal([]cty.Value{
		cty.StringVal(sock), cty.StringVal(dir), cty.StringVal(later),
	})}), nil)
	read := sdk.ExecRequest{Argv: []string{"sh", "-c", `cat "$1/docker.sock" "$1/dir/key" "$1/later" 2>/dev/null; echo done`, "sh", base}}

	must(t, os.Remove(sock))
	must(t, os.RemoveAll(dir))
	res, o := kittest.Exec(t, sb, read)
	if res.ExitCode != 0 || strings.Join(o.Stdout, ",") != "done" {
		t.Fatalf("with the hidden paths gone: %+v %q %q", res, o.Stdout, o.Stderr)
	}
	for _, p := range []string{sock, later} {
		must(t, os.WriteFile(p, []byte("secret\n"), 0o600))
	}
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "key"), []byte("secret\n"), 0o600))
	res, o = kittest.Exec(t, sb, read)
	if res.ExitCode != 0 || strings.Join(o.Stdout, ",") != "done" {
		t.Fatalf("hidden paths readable once back: %+v %q %q", res, o.Stdout, o.Stderr)
	}
}

// fakeBwrap puts a bwrap wrapper in front of sb's real one: its first
// fails calls fail like a setup error, before any command runs; it
// returns a function counting the calls.
func fakeBwrap(t *testing.T, sb *sandbox, fails int) func() int {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := fmt.Sprintf(`#!/bin/sh
echo x >> %[1]q
if [ "$(wc -l < %[1]q)" -le %[2]d ]; then
	echo "bwrap: Can't bind mount /oldroot/ on /newroot/: fake" >&2
	exit 1
fi
exec %[3]q "$@"
`, count, fails, sb.bwrap)
	wrapper := filepath.Join(dir, "bwrap")
	must(t, os.WriteFile(wrapper, []byte(script), 0o755))
	sb.bwrap = wrapper
	return func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "\n")
	}
}

// A bwrap setup failure is retried with its message dropped; a command
// that ran is never retried, whatever it printed; a setup failure that
// persists is reported after setupAttempts tries.
func TestExecRetriesFailedSetupFake(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	t.Run("transient", func(t *testing.T) {
		sb, _ := create(t, cfgOf(nil), nil)
		calls := fakeBwrap(t, sb, setupAttempts-1)
		res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "cat; echo err >&2", Stdin: []byte("out\n")})
		if res.ExitCode != 0 || strings.Join(o.Stdout, ",") != "out" || strings.Join(o.Stderr, ",") != "err" || calls() != setupAttempts {
			t.Fatalf("got %+v %q %q after %d calls", res, o.Stdout, o.Stderr, calls())
		}
	})
	t.Run("command ran", func(t *testing.T) {
		sb, _ := create(t, cfgOf(nil), nil)
		calls := fakeBwrap(t, sb, 0)
		res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "echo 'bwrap: from the command' >&2; exit 1"})
		if res.ExitCode != 1 || strings.Join(o.Stderr, ",") != "bwrap: from the command" || calls() != 1 {
			t.Fatalf("got %+v %q after %d calls", res, o.Stderr, calls())
		}
	})
	t.Run("persistent", func(t *testing.T) {
		sb, _ := create(t, cfgOf(nil), nil)
		calls := fakeBwrap(t, sb, setupAttempts)
		res, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"true"}})
		if res.ExitCode != 1 || len(o.Stderr) != 1 || !strings.HasPrefix(o.Stderr[0], "bwrap: ") || calls() != setupAttempts {
			t.Fatalf("got %+v %q after %d calls", res, o.Stderr, calls())
		}
	})
}

// helperPluginEnv makes the test binary act as a plugin process holding
// one Exec (TestHelperPluginProcess).
const helperPluginEnv = "SANDDUNE_BWRAP_TEST_PLUGIN"

// Execs have no parent-death signal of their own: when the plugin process
// dies, its keeper dies and takes the whole PID namespace with it,
// detached processes included.
func TestPluginDeathKillsExecs(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	marker := "SANDDUNE_TEST_MARK=" + randomHex()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperPluginProcess$")
	cmd.Env = append(os.Environ(), helperPluginEnv+"="+t.TempDir(), marker)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	defer kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	dir, ready := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ready {
		t.Fatalf("helper plugin: %q %v", line, err)
	}
	defer os.RemoveAll(dir)
	var left []string
	for i := 0; !strings.Contains(strings.Join(left, ","), "sleep 1001"); i++ {
		if i == 100 {
			t.Fatalf("the helper's exec is not running: %q", left)
		}
		time.Sleep(100 * time.Millisecond)
		left = markedProcesses(marker)
	}
	kill()
	for range 100 {
		if left = markedProcesses(marker); len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("processes left after the plugin died: %q", left)
}

// TestHelperPluginProcess is the plugin process of
// TestPluginDeathKillsExecs: it starts an Exec with a detached child,
// prints "ready <sandbox dir>" and waits to be killed.
func TestHelperPluginProcess(t *testing.T) {
	wt := os.Getenv(helperPluginEnv)
	if wt == "" {
		t.Skip("helper process of TestPluginDeathKillsExecs")
	}
	sb, err := New().Create(context.Background(), sdk.CreateRequest{
		Config: cfgOf(nil), RunID: "helper", HostRepoPath: wt, WorktreePath: wt,
		Env: map[string]string{"SANDDUNE_TEST_MARK": os.Getenv("SANDDUNE_TEST_MARK")},
	})
	must(t, err)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		_, _ = sb.Exec(context.Background(), sdk.ExecRequest{Shell: `setsid sleep 1001 & echo ready; sleep 1002`}, func(l sdk.OutputLine) {
			if string(l.Text) == "ready" {
				once.Do(func() { close(started) })
			}
		})
	}()
	<-started
	fmt.Println("ready", sb.Info().ID)
	time.Sleep(time.Hour)
}

// A path that two hide entries resolve to (/var/run is a symlink to /run
// on most systems: the docker socket is in the default list twice) is
// hidden once.
func TestMountArgsHideEachPathOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "docker.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "run"), filepath.Join(dir, "var-run")); err != nil {
		t.Fatal(err)
	}
	s := &sandbox{hide: []string{sock, filepath.Join(dir, "var-run", "docker.sock"), filepath.Join(dir, "run")}}
	args := strings.Join(s.mountArgs(), " ")
	if n := strings.Count(args, "--ro-bind /dev/null "+sock); n != 1 {
		t.Errorf("the socket is hidden %d times: %s", n, args)
	}
	if n := strings.Count(args, "--tmpfs "+filepath.Join(dir, "run")); n != 1 {
		t.Errorf("the directory is hidden %d times: %s", n, args)
	}
}
