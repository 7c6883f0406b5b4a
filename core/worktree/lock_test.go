package worktree

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

func itoa(i int) string { return strconv.Itoa(i) }

func TestLockFailsFastAndReleases(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	l, err := r.Lock("branch a", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	info := l.Info()
	if info.PID != os.Getpid() || info.Run != "run-1" || info.Host == "" || info.Started.IsZero() {
		t.Fatalf("info %+v", info)
	}
	if _, err := r.Lock("branch a", "run-2"); err == nil {
		t.Fatal("second lock succeeded")
	}
	if _, err := r.Lock("branch b", "run-2"); err != nil {
		t.Fatal("other keys are independent:", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal("Release not idempotent:", err)
	}
	if _, err := r.Lock("branch a", "run-2"); err != nil {
		t.Fatal(err)
	}
}

// writeStaleLock plants the lock file a run that died left: its holder's
// name inside, no flock on it.
func writeStaleLock(t *testing.T, r *Repo, key string) string {
	t.Helper()
	host, _ := os.Hostname()
	data, _ := json.Marshal(LockInfo{Key: key, Run: "ghost", PID: deadPID(t), Host: host, Started: time.Now()})
	os.MkdirAll(r.LockDir(), 0o755)
	p := filepath.Join(r.LockDir(), lockFileName(key))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLeftoverLockFileIsFree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	writeStaleLock(t, r, "branch a")
	l, err := r.Lock("branch a", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if h, err := r.Holder("branch a"); err != nil || h == nil || h.Run != "run-1" {
		t.Fatalf("holder %+v, %v", h, err)
	}
}

// holdLockEnv makes the test binary a process that takes a lock and waits
// to be killed (see TestMain).
const holdLockEnv = "SANDDUNE_TEST_HOLD_LOCK"

// holdLock takes the lock on key of the repo at root for run "holder",
// says "locked" and sleeps until killed.
func holdLock(root, key string) {
	r, err := Open(context.Background(), root)
	if err == nil {
		_, err = r.Lock(key, "holder")
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(time.Hour)
}

func TestLockOfAKilledHolderIsFree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+r.Root+"|branch a")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("holder: %q", line)
	}
	var le *LockedError
	if _, err := r.Lock("branch a", "run-1"); !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid || le.Holder.Run != "holder" {
		t.Fatalf("got %v, want the holder pid %d named", err, cmd.Process.Pid)
	}
	cmd.Process.Kill() // SIGKILL: no chance to release
	cmd.Wait()
	l, err := r.Lock("branch a", "run-1")
	if err != nil {
		t.Fatal("the kernel did not release the dead holder's lock:", err)
	}
	l.Release()
}

func TestParallelLockOneWinner(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	for round, stale := range []bool{false, true} {
		key := "branch race-" + itoa(round)
		if stale {
			writeStaleLock(t, r, key)
		}
		const n = 16
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []*Lock
		var errs []error
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				l, err := r.Lock(key, "run-"+itoa(i))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					won = append(won, l)
				} else {
					errs = append(errs, err)
				}
			}(i)
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("stale=%v: %d winners", stale, len(won))
		}
		for _, err := range errs {
			var le *LockedError
			if !errors.As(err, &le) || le.Holder.Run != won[0].Info().Run {
				t.Fatalf("stale=%v: loser error %v does not name the winner", stale, err)
			}
		}
	}
}

func TestParallelPrepareSameBranch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	const n = 6
	var wg sync.WaitGroup
	results := make([]*Workspace, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, "bind-mount", "run-"+itoa(i))
		}(i)
	}
	wg.Wait()
	winners := 0
	for i := range results {
		var le *LockedError
		switch {
		case errs[i] == nil:
			winners++
			defer closeWS(t, results[i])
		case !errors.As(errs[i], &le):
			t.Fatalf("run %d: unexpected error %v", i, errs[i])
		}
	}
	if winners != 1 {
		t.Fatalf("%d runs got the branch", winners)
	}
}

func TestParallelMergeToHeadRuns(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ws, err := tryPrepare(r, Strategy{Type: StrategyMergeToHead}, "bind-mount", "par-"+itoa(i))
			if err != nil {
				errs[i] = err
				return
			}
			commitFile(t, ws.Dir, "f"+itoa(i)+".txt", "x", "agent "+itoa(i))
			if _, err := ws.Merge(ctx); err != nil {
				errs[i] = err
			}
			if _, err := ws.Close(ctx); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	for i := 0; i < n; i++ {
		if _, err := os.Stat(filepath.Join(r.Root, "f"+itoa(i)+".txt")); err != nil {
			t.Fatalf("run %d's work missing from main", i)
		}
	}
	hostClean(t, r.Root)
	if out := git(t, r.Root, "branch", "--list", "sanddune/*"); out != "" {
		t.Fatalf("temp branches left: %s", out)
	}
}
