package vercelfake

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const (
	statusRunning = "running"
	statusStopped = "stopped"

	sessionCwd     = "/vercel/sandbox"
	defaultTimeout = 300_000
	defaultVcpus   = 2
	region         = "iad1"
)

// sandbox is a named sandbox.
type sandbox struct {
	name          string
	projectID     string
	persistent    bool
	runtime       string
	vcpus         int
	timeout       int64
	ports         []int
	env           map[string]string
	tags          map[string]string
	networkPolicy json.RawMessage
	createdAt     int64
	updatedAt     int64
	current       *session
}

func (sb *sandbox) json() map[string]any {
	m := map[string]any{
		"name":             sb.name,
		"persistent":       sb.persistent,
		"currentSessionId": sb.current.id,
		"status":           sb.current.state(),
		"region":           region,
		"vcpus":            sb.vcpus,
		"memory":           2048 * sb.vcpus,
		"timeout":          sb.timeout,
		"cwd":              sessionCwd,
		"createdAt":        sb.createdAt,
		"updatedAt":        sb.updatedAt,
		"statusUpdatedAt":  sb.updatedAt,
		"tags":             sb.tags,
	}
	if sb.runtime != "" {
		m["runtime"] = sb.runtime
	}
	if sb.networkPolicy != nil {
		m["networkPolicy"] = sb.networkPolicy
	}
	return m
}

// session is one VM run of a sandbox: a directory that commands see as
// their filesystem.
type session struct {
	id        string
	sb        *sandbox
	dir       string // on the host
	user      string // the default user's name
	createdAt int64
	timer     *time.Timer // auto-stop

	mu        sync.Mutex
	status    string
	stoppedAt int64
	cmds      map[string]*command
}

func (se *session) state() string {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.status
}

func (se *session) json() map[string]any {
	se.mu.Lock()
	defer se.mu.Unlock()
	m := map[string]any{
		"id":          se.id,
		"memory":      2048 * se.sb.vcpus,
		"vcpus":       se.sb.vcpus,
		"region":      region,
		"timeout":     se.sb.timeout,
		"status":      se.status,
		"requestedAt": se.createdAt,
		"createdAt":   se.createdAt,
		"startedAt":   se.createdAt,
		"updatedAt":   max(se.createdAt, se.stoppedAt),
		"cwd":         sessionCwd,
	}
	if se.sb.runtime != "" {
		m["runtime"] = se.sb.runtime
	}
	if se.stoppedAt != 0 {
		m["stoppedAt"] = se.stoppedAt
	}
	if se.sb.networkPolicy != nil {
		m["networkPolicy"] = se.sb.networkPolicy
	}
	return m
}

// newSession makes the session's filesystem: /vercel/sandbox, /tmp, the
// default user's home and /root.
func (s *Server) newSession(sb *sandbox) (*session, error) {
	se := &session{id: newID("se_"), sb: sb, user: "ubuntu", createdAt: now(), status: statusRunning, cmds: map[string]*command{}}
	if sb.runtime != "" {
		se.user = "vercel-sandbox"
	}
	se.dir = filepath.Join(s.root, se.id)
	for _, d := range []string{"vercel/sandbox", "tmp", "home/" + se.user, "root"} {
		if err := os.MkdirAll(filepath.Join(se.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(se.dir, "tmp"), 0o1777); err != nil {
		return nil, err
	}
	se.timer = time.AfterFunc(time.Duration(sb.timeout)*time.Millisecond, func() { s.stopSession(se) })
	return se, nil
}

// stopSession kills the session's commands and marks it stopped. A
// non-persistent sandbox's filesystem is gone with it.
func (s *Server) stopSession(se *session) {
	se.mu.Lock()
	if se.status == statusStopped {
		se.mu.Unlock()
		return
	}
	se.status = statusStopped
	se.stoppedAt = now()
	cmds := make([]*command, 0, len(se.cmds))
	for _, c := range se.cmds {
		cmds = append(cmds, c)
	}
	se.mu.Unlock()
	se.timer.Stop()
	for _, c := range cmds {
		c.kill(9)
		<-c.done
	}
	if !se.sb.persistent {
		_ = removeAll(se.dir)
	}
}

// removeAll removes a session directory, also read-only trees inside it.
func removeAll(dir string) error {
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() && fi.Mode().Perm()&0o700 != 0o700 {
			_ = os.Chmod(p, fi.Mode().Perm()|0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
