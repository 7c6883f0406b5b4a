package execute

import (
	"context"

	"github.com/missingstudio/sanddune/core/session"
)

// Agent sessions: a run resumes resume_session on iteration 1 and captures
// each iteration's session to where the agent CLI's own resume finds it on
// the host (under the host repo root, whatever worktree the run used).

func (r *runner) sessionTransfer(id string) session.Transfer {
	return session.Transfer{
		Sandbox: r.sb, Agent: r.Agent, Config: r.AgentCfg, Storage: *r.Desc.Sessions,
		SessionID: id, HostRepo: r.Repo.Root, Logger: r.log,
	}
}

// prepareResume copies the session to resume into the sandbox.
func (r *runner) prepareResume(ctx context.Context) error {
	if r.ResumeSession == "" {
		return nil
	}
	_, err := session.PrepareResume(ctx, r.sessionTransfer(r.ResumeSession))
	return err
}

// captureSession copies an iteration's session to the host and returns
// its path; a failure is a warning and gives "".
func (r *runner) captureSession(ctx context.Context, id string) string {
	if id == "" || r.Desc.Sessions == nil || !r.CaptureSessions {
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
