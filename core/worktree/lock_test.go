package worktree

import (
	"encoding/json"
	"errors"
	"os"
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

// writeStaleLock plants a lock held by an exited process of this host.
func writeStaleLock(t *testing.T, r *Repo, key string) string {
	t.Helper()
	host, _ := os.Hostname()
	info := LockInfo{Key: key, Run: "ghost", PID: deadPID(t), Host: host, Started: time.Now(), BootID: bootID(), Token: "stale"}
	data, _ := json.Marshal(info)
	os.MkdirAll(r.LockDir(), 0o755)
	p := filepath.Join(r.LockDir(), lockFileName(key))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStaleLockRecovered(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	writeStaleLock(t, r, "branch a")
	l, err := r.Lock("branch a", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Info().Run != "run-1" {
		t.Fatal("wrong holder")
	}
	// A reused pid (same pid, other start time) is stale too.
	l.Release()
	info := l.Info()
	info.StartTicks++
	info.Token = "reused"
	data, _ := json.Marshal(info)
	os.WriteFile(filepath.Join(r.LockDir(), lockFileName("branch a")), data, 0o644)
	if procStartTicks(os.Getpid()) != 0 {
		if _, err := r.Lock("branch a", "run-2"); err != nil {
			t.Fatal("pid-reuse lock not recovered:", err)
		}
	}
}

func TestForeignHostLockIsNotBroken(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	info := LockInfo{Key: "branch a", Run: "remote", PID: deadPID(t), Host: "another-host", Started: time.Now(), Token: "x"}
	data, _ := json.Marshal(info)
	os.MkdirAll(r.LockDir(), 0o755)
	os.WriteFile(filepath.Join(r.LockDir(), lockFileName("branch a")), data, 0o644)
	var le *LockedError
	if _, err := r.Lock("branch a", "run-1"); !errors.As(err, &le) || le.Holder.Host != "another-host" {
		t.Fatalf("got %v", err)
	}
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
			if !errors.As(err, &le) || le.Holder.Token != won[0].Info().Token {
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
