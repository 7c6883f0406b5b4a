package worktree

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LockInfo is the content of a lock file.
type LockInfo struct {
	// Key is what is locked, e.g. "branch agent/x" or "worktree /repo/.sanddune/worktrees/x".
	Key     string    `json:"key"`
	Run     string    `json:"run"`
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	// BootID and StartTicks identify the process across pid reuse and
	// reboots (Linux; empty elsewhere).
	BootID     string `json:"boot_id,omitempty"`
	StartTicks uint64 `json:"start_ticks,omitempty"`
	Token      string `json:"token"`
}

func (i LockInfo) holder() string {
	return fmt.Sprintf("run %s (pid %d on host %s, started %s)", i.Run, i.PID, i.Host, i.Started.Format(time.RFC3339))
}

// LockedError says a key is held by another run.
type LockedError struct {
	Key    string
	Holder LockInfo
	Path   string // the lock file
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is locked by %s; lock file %s", e.Key, e.Holder.holder(), e.Path)
}

// Lock is a held lock. Release it when the run ends.
type Lock struct {
	path string
	info LockInfo
}

// Info returns what the lock file says.
func (l *Lock) Info() LockInfo { return l.info }

// LockDir is where the repo's lock files live.
func (r *Repo) LockDir() string { return filepath.Join(r.CommonDir, "sanddune", "locks") }

// Lock takes the lock on key for run, failing fast with a *LockedError when
// a live process holds it. A lock left by a dead process on this host is
// recovered.
func (r *Repo) Lock(key, run string) (*Lock, error) {
	dir := r.LockDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, lockFileName(key))
	info := LockInfo{Key: key, Run: run, PID: os.Getpid(), Started: time.Now().Round(time.Second)}
	info.Host, _ = os.Hostname()
	info.BootID = bootID()
	info.StartTicks = procStartTicks(info.PID)
	info.Token = randHex(8)
	data, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		err := createExclusive(path, data)
		if err == nil {
			return &Lock{path: path, info: info}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", key, err)
		}
		held, err := readLock(path)
		if errors.Is(err, os.ErrNotExist) && try < 10 {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w (remove %s if no run is active)", key, err, path)
		}
		if try >= 10 || !isStale(held) {
			return nil, &LockedError{Key: key, Holder: held, Path: path}
		}
		if err := breakStale(dir, path, held); err != nil {
			return nil, fmt.Errorf("lock %s: %w", key, err)
		}
	}
}

// lockWait takes the lock, retrying while another run holds it, for at
// most max.
func (r *Repo) lockWait(ctx context.Context, key, run string, max time.Duration) (*Lock, error) {
	deadline := time.Now().Add(max)
	for {
		l, err := r.Lock(key, run)
		var le *LockedError
		if err == nil || !errors.As(err, &le) || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Release removes the lock file if it is still ours. It is idempotent.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	held, err := readLock(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if held.Token != l.info.Token {
		return nil // broken and taken by someone else
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// createExclusive creates path with data atomically: the content is
// written to a temporary file that is then hard-linked to path, which fails
// with os.ErrExist like O_CREATE|O_EXCL does, but never exposes a partly
// written lock file.
func createExclusive(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}

func readLock(path string) (LockInfo, error) {
	var info LockInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return info, fmt.Errorf("unreadable lock file %s: %v", path, err)
	}
	return info, nil
}

// breakStale removes a stale lock under the directory's flock'd guard,
// after checking that it still holds the stale content: two runs racing to
// break the same lock cannot both succeed.
func breakStale(dir, path string, stale LockInfo) error {
	unlock, err := flock(context.Background(), filepath.Join(dir, ".guard"))
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := readLock(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur.Token != stale.Token {
		return nil // someone else broke it and took it; the caller retries and reports them
	}
	return os.Remove(path)
}

// flock takes an exclusive flock(2) on path (created if missing), polling
// so that ctx can end the wait. The kernel drops it if the process dies.
func flock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// adminGit runs a git command that reads or changes the repo's worktree and
// branch administration (worktree add/list/remove/prune, branch create and
// delete) with the other runs' ones serialised: concurrent `git worktree
// add` calls otherwise read each other's half-written metadata and fail.
func (r *Repo) adminGit(ctx context.Context, args ...string) (string, error) {
	if err := os.MkdirAll(r.LockDir(), 0o755); err != nil {
		return "", err
	}
	unlock, err := flock(ctx, filepath.Join(r.LockDir(), ".admin"))
	if err != nil {
		return "", err
	}
	defer unlock()
	return r.Git(ctx, args...)
}

// isStale reports whether the lock's process is certainly gone: same host
// and a different boot, a dead pid, or a pid reused by a younger process.
func isStale(i LockInfo) bool {
	host, _ := os.Hostname()
	if i.Host != host || i.PID <= 0 {
		return false
	}
	if b := bootID(); b != "" && i.BootID != "" && b != i.BootID {
		return true
	}
	if err := syscall.Kill(i.PID, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	if i.StartTicks != 0 {
		if st := procStartTicks(i.PID); st != 0 && st != i.StartTicks {
			return true
		}
	}
	return false
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStartTicks returns a process's start time in clock ticks since boot
// (field 22 of /proc/<pid>/stat), or 0 when unknown.
func procStartTicks(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// lockFileName maps a key to a readable, bounded, collision-free file name.
func lockFileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	for _, r := range key {
		if b.Len() >= 64 {
			break
		}
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String() + "-" + hex.EncodeToString(sum[:6]) + ".lock"
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
