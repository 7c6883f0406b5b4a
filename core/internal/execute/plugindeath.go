package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/core/gc"
	"github.com/missingstudio/sanddune/sdk"
)

// cleanup is what the teardown did after the sandbox plugin died: it
// relaunched the plugin and ran the run-scoped gc through it (ADR 0016).
type cleanup struct {
	id        string // the run's sandbox, "" when Create never returned one
	err       error  // restarting the plugin or listing its resources failed
	sandboxes []gc.Sandbox
}

// pluginDied reports whether err says the sandbox plugin's process is
// gone.
func pluginDied(err error) bool { return errors.Is(err, sdk.ErrPluginShutdown) }

// collect cleans up after the sandbox plugin died (r.sandboxDied): only
// the provider can reach its resources, so the plugin is relaunched and
// the run's resources (by its sdk.LabelRun) are collected through it, an
// isolated sandbox's work salvaged onto the run's branch first. id is the
// run's sandbox, if it had one.
func (r *runner) collect(tctx context.Context, id string) {
	ph := r.progress.Phase("Cleaning up after the sandbox plugin died")
	c := &cleanup{id: id}
	r.cleanup = c
	var prov sdk.SandboxProvider
	if r.Sandbox.Restart == nil {
		c.err = errors.New("this sanddune cannot restart it")
	} else {
		prov, c.err = r.Sandbox.Restart(tctx)
	}
	if c.err == nil {
		c.sandboxes, c.err = gc.Sandboxes(tctx, r.Sandbox.Address, prov, r.Sandbox.Config, gc.Options{Mine: true, Run: r.runID()})
	}
	for _, s := range c.sandboxes {
		if sv := s.Salvage; sv != nil && sv.Landed {
			if sv.PatchPath != "" {
				r.res.PatchPath = sv.PatchPath
			}
			if sv.RescueBranch != "" {
				r.res.Branch, r.res.Commits = sv.RescueBranch, sv.Commits
			}
		}
		if c.err == nil && s.Action != gc.Removed {
			c.err = fmt.Errorf("sandbox %s: %s", s.Resource.ID, s.Reason)
		}
	}
	ph.Done(c.err)
	if c.err == nil {
		r.progress.Warn("the sandbox plugin died: sanddune restarted it and %s", c.done())
	}
}

// done says what the cleanup removed and salvaged.
func (c *cleanup) done() string {
	if len(c.sandboxes) == 0 {
		return "found nothing of this run left"
	}
	var parts []string
	for _, s := range c.sandboxes {
		what := "removed sandbox " + s.Resource.ID
		if !s.Isolated {
			what += " with anything still running in it"
		}
		if sv := s.Salvage; sv != nil && sv.Landed {
			var saved []string
			if len(sv.Commits) > 0 {
				saved = append(saved, fmt.Sprintf("%d commit(s) onto branch %s", len(sv.Commits), sv.Branch))
			}
			if sv.PatchPath != "" {
				saved = append(saved, "its uncommitted work to "+sv.PatchPath)
			}
			what += " after salvaging " + strings.Join(saved, " and ")
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, "; ")
}

// crashHint says what a sandbox plugin that died left, and what to do.
func (r *runner) crashHint() string {
	c := r.cleanup
	if c == nil { // the teardown has not run yet (a step of a kept sandbox)
		return "the sandbox plugin died: closing the sandbox restarts the plugin to salvage the sandbox's work and remove it"
	}
	if c.err == nil {
		return "the sandbox plugin died; sanddune restarted it and " + c.done() + ": run again to continue"
	}
	left := "its sandbox, if the plugin made one,"
	if c.id != "" {
		left = "sandbox " + c.id
	}
	for _, s := range c.sandboxes {
		if s.Action != gc.Removed {
			left = "sandbox " + s.Resource.ID
		}
	}
	return fmt.Sprintf("the sandbox plugin died and cleaning up through it again failed (%v): %s (provider %s, label %s=%s) is left "+
		"with whatever the agent still runs in it: once this run has exited, `sanddune gc` salvages its work and removes it; then run again",
		c.err, left, r.Sandbox.Address, sdk.LabelRun, r.runID())
}
