package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/core/internal/proc"
)

// LockInfo says who holds a lock: it is written inside the locked file.
type LockInfo struct {
	// Key is what is locked, e.g. "branch agent/x" or "worktree /repo/.sanddune/worktrees/x".
	Key     string    `json:"key"`
	Run     string    `json:"run"`
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

func (i LockInfo) holder() string {
	if i.PID == 0 {
		return "another run (still starting: it has not written its name yet)"
	}
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

// Lock is a held lock. Release it when the run ends; the kernel releases
// it when the process dies.
type Lock struct {
	f    *os.File
	info LockInfo
	path string // the repo's CommonDir and the key, for claims
}

// Info returns who holds the lock.
func (l *Lock) Info() LockInfo { return l.info }

// LockDir is where the repo's lock files live.
func (r *Repo) LockDir() string { return filepath.Join(r.CommonDir, "sanddune", "locks") }

// Lock takes the lock on key for run: an exclusive flock(2) on a file in
// LockDir, failing fast with a *LockedError naming the holder when another
// process (or another Lock of this one) has it.
func (r *Repo) Lock(key, run string) (*Lock, error) {
	dir := r.LockDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, lockFileName(key))
	info := LockInfo{Key: key, Run: run, PID: os.Getpid(), Started: time.Now().Round(time.Second)}
	info.Host, _ = os.Hostname()
	f, err := flockFile(path, syscall.LOCK_EX)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		held := readHolder(path)
		// The holder writes its name right after locking; until then the
		// file is empty or still names a dead earlier holder.
		for i := 0; i < 100 && !live(held); i++ {
			time.Sleep(10 * time.Millisecond)
			held = readHolder(path)
		}
		return nil, &LockedError{Key: key, Holder: held, Path: path}
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	data, _ := json.Marshal(info)
	if err = f.Truncate(0); err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", key, err)
	}
	l := &Lock{f: f, info: info, path: r.CommonDir + "\x00" + key}
	claims.note(l.path)
	return l, nil
}

// flockFile opens path (created if missing) and takes a non-blocking
// flock of kind on it. A file that a releasing holder unlinked meanwhile
// is not a lock: it retries on the file now at path.
func flockFile(path string, kind int) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := flockRetry(f, kind|syscall.LOCK_NB); err != nil {
			f.Close()
			return nil, err
		}
		if isFileAt(f, path) {
			return f, nil
		}
		f.Close()
	}
}

func flockRetry(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// isFileAt reports whether the open file is still the one at path.
func isFileAt(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// live reports whether info names a process that still exists.
func live(info LockInfo) bool {
	return info.PID != 0 && !proc.Gone(info.PID)
}

// readHolder reads what the holder wrote into a lock file; an empty or
// unreadable file (its holder is just taking it) gives a zero LockInfo.
func readHolder(path string) LockInfo {
	var info LockInfo
	f, err := os.Open(path)
	if err != nil {
		return info
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	_ = json.Unmarshal(data, &info)
	return info
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

// Release removes the lock file and drops the lock. It is idempotent.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	claims.note(l.path)
	// Unlink while still holding it: a waiter that opened this file finds it
	// unlinked after locking and retries on a new one (flockFile).
	err := os.Remove(l.f.Name())
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// flock takes an exclusive flock(2) on path (created if missing), polling
// so that ctx can end the wait. The kernel drops it if the process dies.
func flock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := flockRetry(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
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

// admin runs fn, which reads or changes the repo's worktree and branch
// administration (worktree admin dirs, `git worktree prune`, branch
// create and delete), with the other runs' ones serialised: git commands
// otherwise read each other's half-written metadata and fail.
func (r *Repo) admin(ctx context.Context, fn func() error) error {
	if err := os.MkdirAll(r.LockDir(), 0o755); err != nil {
		return err
	}
	unlock, err := flock(ctx, filepath.Join(r.LockDir(), ".admin"))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// adminGit runs an administration git command under the admin flock.
func (r *Repo) adminGit(ctx context.Context, args ...string) (out string, err error) {
	err = r.admin(ctx, func() error {
		out, err = r.Git(ctx, args...)
		return err
	})
	return out, err
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

// claims remembers when runs of this process last held each lock (of any
// repo): runs of one process may each have opened the repo on their own.
var claims claimLog

// claimLog maps a repo's CommonDir and a lock key to when a run of this
// process last held that lock.
type claimLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (c *claimLog) note(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]time.Time{}
	}
	c.last[key] = time.Now()
}

// HeldSince reports whether a run held the lock on key at some moment
// since t: a process holds it now, or a run of this process held it after
// t. The ref guard uses it to tell another run's
// branch moving from an agent's doing.
func (r *Repo) HeldSince(key string, t time.Time) bool {
	claims.mu.Lock()
	last, ok := claims.last[r.CommonDir+"\x00"+key]
	claims.mu.Unlock()
	if ok && !last.Before(t) {
		return true
	}
	h, err := r.Holder(key)
	return err == nil && h != nil
}
