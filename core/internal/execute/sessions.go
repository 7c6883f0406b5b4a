package execute

import (
	"context"
	"os"
	"time"

	"github.com/missingstudio/sanddune/core/internal/session"
	"github.com/missingstudio/sanddune/core/internal/tempdir"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/sdk"
)

// Agent sessions: a run resumes resume_session on iteration 1 and captures
// each iteration's session to where the agent CLI's own resume finds it on
// the host (under the host repo root, whatever worktree the run used).
// A sandbox that mounts host directories (Caps.Mounts) gets one at the
// agent's session directory: its sessions are then files on the host,
// read and written with no copy through the sandbox.

func (r *runner) sessionTransfer(sb sdk.Sandbox, id string) session.Transfer {
	return session.Transfer{
		Sandbox: sb, Agent: r.Agent.Provider, Config: r.Agent.Config, Storage: *r.Desc.Sessions,
		SessionID: id, HostRepo: r.Repo.Root, Mounts: r.sessionMounts, Logger: r.log,
	}
}

// sessionMount is the mount asked of a sandbox that mounts, in a run that
// captures or resumes sessions: a private directory made for it
// (sessionDir) at the agent's session directory. None when the agent's
// storage has no static directory, or the directory cannot be made:
// sessions are then copied.
func (r *runner) sessionMount() []sdk.Mount {
	if !r.Caps.Mounts || r.Desc.Sessions == nil || !r.CaptureSessions && r.ResumeSession == "" {
		return nil
	}
	dir, ok := session.MountDir(*r.Desc.Sessions)
	if !ok {
		return nil
	}
	host, err := tempdir.Make("sessions")
	if err != nil {
		r.log.Warn("sessions are copied: no directory to mount", "error", err)
		return nil
	}
	r.sessionDir = host
	return []sdk.Mount{{HostPath: host, SandboxPath: dir}}
}

// mountedSessions notes whether sandbox sb mounted sessionDir (its Info
// lists it); when it did not, sessions are copied.
func (r *runner) mountedSessions(sb sdk.Sandbox) {
	for _, m := range sb.Info().Mounts {
		if r.sessionDir != "" && m.HostPath == r.sessionDir {
			r.sessionMounts = []sdk.Mount{m}
			return
		}
	}
	if r.sessionDir != "" {
		r.log.Debug("the sandbox did not mount the session directory: sessions are copied", "dir", r.sessionDir)
	}
}

// dropSessionDir removes sessionDir, once its sandbox is gone and the
// captures from it have ended.
func (r *runner) dropSessionDir() {
	if r.sessionDir != "" {
		if err := os.RemoveAll(r.sessionDir); err != nil {
			r.log.Warn("removing the session directory", "dir", r.sessionDir, "error", err)
		}
	}
	r.sessionDir, r.sessionMounts = "", nil
}

// prepareResume copies the session to resume into the sandbox.
func (r *runner) prepareResume(ctx context.Context) error {
	if r.ResumeSession == "" {
		return nil
	}
	_, err := session.PrepareResume(ctx, r.sessionTransfer(r.sb, r.ResumeSession))
	return err
}

// captureTimeout bounds one session capture, which cancelling the run
// does not cut short.
const captureTimeout = 2 * time.Minute

// captureSession copies an iteration's session out of sandbox sb to the
// host and returns its path; a failure is a warning and gives "". It runs
// while the next iteration, or the teardown, does (sessionCaptures), so a
// Ctrl-C then does not cancel it: the session of an iteration that has
// ended is kept.
func (r *runner) captureSession(ctx context.Context, sb sdk.Sandbox, id string) string {
	if id == "" || r.Desc.Sessions == nil || !r.CaptureSessions {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), captureTimeout)
	defer cancel()
	path, err := session.Capture(ctx, r.sessionTransfer(sb, id))
	if err != nil {
		r.progress.Warn("could not capture agent session %s: %v", id, err)
		return ""
	}
	r.progress.Info("agent session %s saved to %s", id, path)
	return path
}

// sessionCaptures captures iterations' sessions in the background, one
// after another in iteration order: when an agent reports one session for
// several iterations, the last iteration's copy is the one kept.
type sessionCaptures struct {
	last  chan struct{}  // closed when the latest capture has ended
	paths map[int]string // iteration index → host path; each capture writes after the one before
}

// start captures iteration i's session once the captures before it ended.
func (c *sessionCaptures) start(i int, capture func() string) {
	if c.paths == nil {
		c.paths = map[int]string{}
	}
	prev, done := c.last, make(chan struct{})
	c.last = done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if p := capture(); p != "" {
			c.paths[i] = p
		}
	}()
}

// ended waits for the captures started.
func (c *sessionCaptures) ended() {
	if c.last != nil {
		<-c.last
	}
}

// wait waits for the captures started and records their paths in its.
func (c *sessionCaptures) wait(its []run.Iteration) {
	c.ended()
	for i, p := range c.paths {
		its[i].SessionFilePath = p
	}
}
