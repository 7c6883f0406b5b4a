// Package session moves agent sessions between a sandbox and the host:
// capture after an iteration, and the reverse before a resumed iteration.
// It knows no agent by name: where session files live comes from the agent's
// sdk.SessionStorage (its Describe), and the cwd rewriting from the agent's
// RewriteSession.
//
// How the engine uses it:
//
//	desc, _ := agent.Describe(ctx, cfg)
//	// Before any sandbox starts, for resume_session = id:
//	if err := session.CheckResume(desc, fork); err != nil { ... }  // unsupported: a config error
//	if _, err := session.FindHost(ctx, agent, *desc.Sessions, hostRepo, hostHome, id); err != nil { ... }
//	// Once the sandbox is up, before iteration 1:
//	t := session.Transfer{Sandbox: sb, Agent: agent, Config: cfg, Storage: *desc.Sessions,
//		SessionID: id, HostRepo: hostRepo, HostHome: hostHome}
//	if _, err := session.PrepareResume(ctx, t); err != nil { ... }  // fails the run
//	// After each iteration that reported a session id:
//	if session.CaptureEnabled(desc) {
//		t.SessionID = iterationSessionID
//		path, err := session.Capture(ctx, t)  // err: a warning; session_file_path stays empty
//	}
//
// Storage patterns use the placeholders {home}, {cwd}, {cwd_encoded},
// {session_id} and {session_id:N} (the id's first N characters) and may
// hold '*' globs within one path segment. A pattern
// without globs (Claude's) names the file: a capture copies it and its
// companion directory out at once, with no listing. Otherwise a capture
// finds the newest sandbox file matching the pattern (one `find` in the
// sandbox) and writes it to the host path made of the host-side pattern
// with every '*' replaced by what it matched in the sandbox, e.g. Codex's
// sessions/2026/07/01/rollout-<ts>-<id>.jsonl keeps its date directories.
// Resume does the reverse. A directory beside the file named like it
// without ".jsonl" (Claude's <id>/subagents/...) is copied along, best
// effort.
//
// Where the sandbox mounts a host directory at the storage's static
// directory (MountDir; Transfer.Mounts), the copies and the listing of
// files inside it are done on the host, through an os.Root of the
// directory.
//
// The host side works on the realpath of the host repo, as the CLIs do.
// An agent asks for capture with AgentDescription.CaptureSessions (its
// plugin's `capture_sessions` attribute, say; see CaptureEnabled).
package session
