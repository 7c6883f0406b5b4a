package core

import (
	"context"
	"fmt"

	"github.com/missingstudio/sanddune/core/session"
)

// Agent sessions: a run resumes resume_session on iteration 1 and captures
// each iteration's session to where the agent CLI's own resume finds it on
// the host (under the host repo root, whatever worktree the run used).

// checkResume verifies, before anything starts, that the agent can resume
// (or fork) and that the session exists on the host.
func (r *runner) checkResume() error {
	o := r.opts
	if o.ResumeSession == "" {
		return nil
	}
	if o.MaxIterations > 1 {
		return fmt.Errorf("resume_session resumes iteration 1 only, so max_iterations must be 1 (it is %d)", o.MaxIterations)
	}
	if err := session.CheckResume(r.desc, o.ForkSession); err != nil {
		return err
	}
	_, err := session.FindHost(*r.desc.Sessions, r.repo.Root, "", o.ResumeSession)
	return err
}

func (r *runner) sessionTransfer(id string) session.Transfer {
	return session.Transfer{
		Sandbox: r.sb, Agent: r.agentP, Config: r.opts.Agent.Config, Storage: *r.desc.Sessions,
		SessionID: id, HostRepo: r.repo.Root, Logger: r.log,
	}
}

// prepareResume copies the session to resume into the sandbox.
func (r *runner) prepareResume(ctx context.Context) error {
	if r.opts.ResumeSession == "" {
		return nil
	}
	_, err := session.PrepareResume(ctx, r.sessionTransfer(r.opts.ResumeSession))
	return err
}

// captureSession copies an iteration's session to the host and returns
// its path; a failure is a warning and gives "".
func (r *runner) captureSession(ctx context.Context, id string) string {
	if id == "" || r.desc.Sessions == nil || !session.CaptureEnabled(r.opts.Agent.Config, r.desc) {
		return ""
	}
	path, err := session.Capture(ctx, r.sessionTransfer(id))
	if err != nil {
		r.progress.Warn("could not capture agent session %s: %v", id, err)
		return ""
	}
	r.progress.Info("agent session %s saved to %s", id, path)
	return path
}
