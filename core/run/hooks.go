package run

import (
	"fmt"
	"time"
)

// DefaultHookTimeout bounds a hook without its own timeout.
const DefaultHookTimeout = 60 * time.Second

// Hook is one shell command.
type Hook struct {
	Command string
	Timeout time.Duration // DefaultHookTimeout when zero
	Sudo    bool          // sandbox hooks only
}

// Hooks are a run's hooks, by when and where they run.
type Hooks struct {
	HostOnWorktreeReady   []Hook // sequential, on the host, in the worktree, while the sandbox is created
	HostOnSandboxReady    []Hook // on the host, parallel with SandboxOnSandboxReady
	SandboxOnSandboxReady []Hook // inside the sandbox
}

// PathHook is a hook with its path in a run block
// ("hooks.sandbox.on_sandbox_ready[0]").
type PathHook struct {
	Path string
	Hook
}

// All lists the hooks with their paths, in the order of the fields.
func (s Hooks) All() []PathHook {
	var out []PathHook
	for _, l := range []struct {
		path string
		hs   []Hook
	}{{"hooks.host.on_worktree_ready", s.HostOnWorktreeReady}, {"hooks.host.on_sandbox_ready", s.HostOnSandboxReady},
		{"hooks.sandbox.on_sandbox_ready", s.SandboxOnSandboxReady}} {
		for i, h := range l.hs {
			out = append(out, PathHook{Path: fmt.Sprintf("%s[%d]", l.path, i), Hook: h})
		}
	}
	return out
}

// WithTimeout returns the set with d as the timeout of each hook that
// has none of its own.
func (s Hooks) WithTimeout(d time.Duration) Hooks {
	set := func(hs []Hook) []Hook {
		if hs == nil {
			return nil
		}
		out := make([]Hook, len(hs))
		for i, h := range hs {
			if h.Timeout == 0 {
				h.Timeout = d
			}
			out[i] = h
		}
		return out
	}
	return Hooks{HostOnWorktreeReady: set(s.HostOnWorktreeReady), HostOnSandboxReady: set(s.HostOnSandboxReady), SandboxOnSandboxReady: set(s.SandboxOnSandboxReady)}
}
