package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Step is one step of a session: a planned run (its agent, prompt and
// loop) carried out in the session's worktree and sandbox.
type Step struct {
	Label string
	Spec  *Spec
	// ResumePrevious continues the previous step's last agent session.
	ResumePrevious bool
}

// MaxIterations is a session's iteration limit: its steps' together.
func MaxIterations(steps []Step) int {
	n := 0
	for _, st := range steps {
		n += st.Spec.MaxIterations
	}
	return n
}

// RunSession runs steps in order in one worktree and one sandbox, both
// made from the first step's spec (the steps share everything but agent,
// prompt and loop), and torn down once at the end. Each step is a full
// run with its own result; a failing step ends the session. The session's
// result holds the steps' outcomes (run.Result.Steps), each step's commits
// being those it made.
func RunSession(ctx context.Context, name string, steps []Step) (*run.Result, error) {
	first := *steps[0].Spec
	first.Name = name
	first.MaxIterations = MaxIterations(steps)
	// The sandbox gets every step's env; a later step's value wins.
	first.Env = map[string]string{}
	for _, st := range steps {
		for k, v := range st.Spec.Env {
			first.Env[k] = v
		}
	}
	r, err := start(ctx, &first)
	if err != nil {
		return nil, err
	}
	var heads []string // the sandbox's HEAD before the first step and after each
	res, err := r.run(ctx, func(ctx context.Context) *run.Error {
		session := r.res
		shared := r.Spec
		defer func() { r.Spec, r.res = shared, session }()
		heads = append(heads, r.sandboxHead(ctx))
		previous := ""
		for i, st := range steps {
			r.Spec, r.res = st.Spec, &run.Result{Name: st.Label}
			session.Steps = append(session.Steps, run.Outcome{Name: st.Label, Result: r.res})
			r.progress.Info("step %d/%d: %s (agent %s)", i+1, len(steps), st.Label, st.Spec.Agent.Address)
			start := time.Now()
			var stepErr *run.Error
			if st.ResumePrevious && previous == "" {
				stepErr = r.fail(ctx, run.PhaseSession, r.Agent.Address, 1, fmt.Errorf("step %s resumes the previous step's agent session, but it reported none", st.Label),
					"the previous step's agent must report its session id (claude, codex, pi do)")
			} else if st.ResumePrevious {
				// The previous step's session is in the sandbox already.
				r.Spec = withResume(st.Spec, previous)
				stepErr = r.iterate(ctx)
			} else {
				stepErr = r.body(ctx)
			}
			r.res.Elapsed = time.Since(start)
			heads = append(heads, r.sandboxHead(ctx))
			session.Iterations = append(session.Iterations, r.res.Iterations...)
			session.CompletionSignal, session.Stdout, session.Output = r.res.CompletionSignal, r.res.Stdout, r.res.Output
			if n := len(r.res.Iterations); n > 0 {
				previous = r.res.Iterations[n-1].SessionID
			}
			if stepErr != nil {
				stepErr.Run = name + "." + st.Label
				session.Steps[i].Err = stepErr
				return stepErr
			}
		}
		return nil
	})
	if res != nil {
		r.stepCommits(ctx, res, heads)
	}
	for _, st := range steps {
		res, err = redacted(st.Spec.Redact, res, err)
	}
	return res, err
}

func withResume(s *Spec, id string) *Spec {
	c := *s
	c.ResumeSession = id
	return &c
}

// sandboxHead is the commit checked out in the sandbox, "" when unknown.
func (r *runner) sandboxHead(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	if r.sb == nil { // a session on the host, in the worktree
		head, err := worktree.Git(ctx, r.hostDir(), "rev-parse", "HEAD")
		if err != nil {
			r.log.Debug("could not read the worktree's HEAD", "error", err)
		}
		return strings.TrimSpace(head)
	}
	var out strings.Builder
	res, err := r.sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"git", "rev-parse", "HEAD"}, Timeout: probeTimeout}, func(l sdk.OutputLine) {
		if l.Stream == sdk.Stdout {
			out.Write(l.Text)
		}
	})
	if err != nil || res.ExitCode != 0 {
		r.log.Debug("could not read the sandbox's HEAD", "error", err)
		return ""
	}
	return strings.TrimSpace(out.String())
}

// stepCommits gives each step's result the commits it made (heads[i] to
// heads[i+1]), once the session's commits are on the host, and the
// session's branch and kept paths.
func (r *runner) stepCommits(ctx context.Context, res *run.Result, heads []string) {
	for i, o := range res.Steps {
		o.Result.Branch, o.Result.LogFile = res.Branch, res.LogFile
		o.Result.PreservedWorktreePath, o.Result.PatchPath = res.PreservedWorktreePath, res.PatchPath
		if i+1 >= len(heads) || heads[i] == "" || heads[i+1] == "" {
			continue
		}
		cs, err := r.Repo.Commits(context.WithoutCancel(ctx), heads[i], heads[i+1])
		if err != nil && !errors.Is(err, context.Canceled) {
			r.log.Debug("listing a step's commits failed", "step", o.Name, "error", err)
		}
		o.Result.Commits = cs
	}
}
