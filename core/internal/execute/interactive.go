package execute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/terminal"
	"github.com/missingstudio/sanddune/sdk"
)

// Interactive is how an interactive session reaches the user's terminal.
type Interactive struct {
	// Attach runs req on sb with the user's terminal attached.
	Attach func(ctx context.Context, sb sdk.TTYSandbox, req sdk.ExecRequest) (sdk.ExecResult, error)
	// Term is the user's TERM.
	Term string
}

// session runs the agent's TUI on the user's terminal, in the sandbox or,
// without one, on a host pseudo-terminal in the worktree.
func (r *runner) session(ctx context.Context) *run.Error {
	target := r.HostBranch
	if target == "" {
		target = r.ws.TargetBranch
	}
	p := r.Prompt.Fill(r.ws.Branch, target, r.mergeArgs())
	if r.sb == nil && len(p.Expressions()) > 0 {
		return r.fail(ctx, run.PhasePrompt, "", 1, errors.New("the prompt's !`command` expressions need a sandbox to run in"),
			"drop them from the prompt file, or use a sandbox provider")
	}
	text, err := r.renderPrompt(ctx, p)
	if err != nil {
		return r.fail(ctx, run.PhasePrompt, r.Sandbox.Address, 1, err, "fix the shell expression in the prompt file, or what it needs in the sandbox")
	}
	asRoot := os.Geteuid() == 0
	if r.sb != nil {
		asRoot = r.runsAsRoot(ctx)
	}
	cmd, err := r.Agent.Provider.BuildCommand(ctx, sdk.CommandRequest{
		Config: r.Agent.Config, Mode: sdk.ModeInteractive, Prompt: text, Iteration: 1,
		ResumeSessionID: r.ResumeSession, ForkSession: r.ForkSession,
		SkipPermissions: r.Caps.Confines, RunsAsRoot: asRoot,
	})
	if err == nil && (len(cmd.Argv) > 0) == (cmd.Shell != "") {
		err = errors.New("the agent plugin returned a command with both or neither of argv and shell")
	}
	if err != nil {
		return r.fail(ctx, run.PhaseAgent, r.Agent.Address, 1, fmt.Errorf("building the agent's interactive command: %w", err), "")
	}
	req := sdk.ExecRequest{Argv: cmd.Argv, Shell: cmd.Shell, Env: map[string]string{}}
	var tty sdk.TTYSandbox
	if r.sb == nil {
		host := &terminal.Host{}
		defer host.Close()
		tty = host
		req.Cwd = r.ws.Dir
		if req.Cwd == "" {
			req.Cwd = r.Repo.Root
		}
		// On the host the session's env is the whole environment: the
		// user's, then the run's.
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok {
				req.Env[k] = v
			}
		}
		for k, v := range r.sandboxEnv(ctx) {
			req.Env[k] = v
		}
	} else {
		maps.Copy(req.Env, r.execEnv())
		var ok bool
		if tty, ok = r.sb.(sdk.TTYSandbox); !ok {
			return r.fail(ctx, run.PhaseSandbox, r.Sandbox.Address, 1, errors.New("the sandbox declares the TTY capability but cannot run a terminal session"), "")
		}
	}
	for k, v := range cmd.Env {
		req.Env[k] = v
	}
	if r.Interactive.Term != "" {
		req.Env["TERM"] = r.Interactive.Term
	}
	r.progress.Info("interactive session: agent %s in %s", r.Agent.Address, r.Sandbox.Address)
	res, err := r.Interactive.Attach(ctx, tty, req)
	r.res.Iterations = append(r.res.Iterations, run.Iteration{})
	switch {
	case err != nil:
		return r.fail(ctx, run.PhaseAgent, r.Sandbox.Address, 1, fmt.Errorf("the interactive session failed: %w", err), "check the sandbox plugin's log")
	case res.ExitCode != 0:
		return r.fail(ctx, run.PhaseAgent, r.Agent.Address, 1, &run.AgentExitError{ExitCode: res.ExitCode}, "the agent's TUI exited with an error; its commits are kept")
	}
	return nil
}
