package planning

import (
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
)

// NoSandbox is the address of `sandbox = "none"`, and NoSandboxCaps what
// the host offers in its place: the worktree as it is (like a bind mount),
// a terminal, and no boundary.
const NoSandbox = "none"

var NoSandboxCaps = sdk.SandboxCapabilities{Contract: sdk.ContractBindMount, TTY: true}

// Boundary is what CheckBoundary needs to know about where a run's agent
// runs.
type Boundary struct {
	Block       string
	SandboxAddr string
	AgentAddr   string
	Caps        sdk.SandboxCapabilities
	Desc        sdk.AgentDescription
	// NoSandbox: sandbox = "none". Interactive: an interactive session (a
	// user answers the agent's permission prompts).
	NoSandbox, Interactive bool
	AllowUnconfined        bool
	SandboxHooks, Resume   bool
}

// CheckBoundary checks where the agent of a run runs:
//   - no sandbox only for interactive sessions, and then without sandbox
//     hooks or a session to resume (nothing to run them in);
//   - an interactive session only in a sandbox with a terminal (TTY);
//   - an unattended run of an agent that needs a boundary
//     (BypassesPermissions) only in a sandbox that confines it, unless
//     the run allows otherwise (a warning then).
func CheckBoundary(b Boundary) Diagnostics {
	diag := func(sev Severity, attr, summary, detail string) Diagnostics {
		return Diagnostics{{Severity: sev, Block: b.Block, Attribute: attr, Summary: summary, Detail: detail}}
	}
	switch {
	case b.NoSandbox && !b.Interactive:
		return diag(Error, "sandbox", "No sandbox outside interactive sessions",
			`sandbox = "none" is only for interactive sessions ("sanddune interactive"): an unattended run needs a sandbox provider.`)
	case b.NoSandbox && (b.SandboxHooks || b.Resume):
		return diag(Error, "sandbox", "No sandbox for sandbox hooks or resume_session",
			`sandbox = "none" has no sandbox to run sandbox hooks or to resume a session in: drop them, or use a sandbox provider.`)
	case b.Interactive && !b.Caps.TTY:
		return diag(Error, "sandbox", "Sandbox without a terminal",
			fmt.Sprintf(`%s cannot run interactive sessions (its provider does not declare the TTY capability): use docker, bubblewrap or local, or sandbox = "none".`, b.SandboxAddr))
	case b.Interactive || b.Caps.Confines || !b.Desc.BypassesPermissions:
		return nil
	case b.AllowUnconfined:
		return diag(Warning, "allow_unconfined", "The agent runs unconfined",
			fmt.Sprintf("%s does not confine the agent: %s runs unattended as you on this machine (allow_unconfined = true).", b.SandboxAddr, b.AgentAddr))
	}
	return diag(Error, "sandbox", "The sandbox does not confine the agent",
		fmt.Sprintf("%s does not confine the agent, so %s would run unattended as you on this machine, with no boundary around what it does: "+
			"use a confining sandbox (docker, bubblewrap), or set allow_unconfined = true to accept the risk.", b.SandboxAddr, b.AgentAddr))
}
