package enginetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/claude"
	"github.com/missingstudio/sanddune/plugins/docker"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// claudeSessionID is the session id of the claude stream fixture.
const claudeSessionID = "3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48"

// inContainerClaude behaves like Claude Code for sessions: it appends to
// its session file under ~/.claude/projects/<cwd encoded>/, refuses a
// --resume of a session it cannot find there, and prints the fixture.
const inContainerClaude = `#!/bin/sh
cat > /dev/null
id=` + claudeSessionID + `
dir="$HOME/.claude/projects/$(pwd | sed 's/[^A-Za-z0-9]/-/g')"
case " $* " in
*" --resume $id "*) [ -f "$dir/$id.jsonl" ] || { echo "No conversation found with session ID: $id" >&2; exit 1; } ;;
esac
mkdir -p "$dir/$id/subagents" &&
printf '{"type":"user","cwd":"%s","sessionId":"%s","uid":"%s"}\n' "$PWD" "$id" "$(id -u)" >> "$dir/$id.jsonl" &&
printf '{"cwd":"%s","isSidechain":true}\n' "$PWD" > "$dir/$id/subagents/agent-a1.jsonl" &&
cat /fixture/claude-stream.jsonl
`

// copyCounting counts a sandbox's CopyIn and CopyOut calls (Docker
// archive requests), and can hide the provider's Mounts capability or
// leave the host's mounts out (as a provider that cannot make one
// writable does).
type copyCounting struct {
	sdk.SandboxProvider
	noMounts, leaveOut bool
	copies             *atomic.Int32
}

func (p copyCounting) Info(ctx context.Context) (sdk.Info, error) {
	info, err := p.SandboxProvider.Info(ctx)
	if err == nil && p.noMounts {
		caps := *info.Sandbox
		caps.Mounts = false
		info.Sandbox = &caps
	}
	return info, err
}

func (p copyCounting) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	if p.leaveOut {
		req.Mounts = nil
	}
	sb, err := p.SandboxProvider.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	return countedSandbox{Sandbox: sb, copies: p.copies}, nil
}

type countedSandbox struct {
	sdk.Sandbox
	copies *atomic.Int32
}

func (s countedSandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	s.copies.Add(1)
	return s.Sandbox.CopyIn(ctx, hostPath, sandboxPath)
}

func (s countedSandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	s.copies.Add(1)
	return s.Sandbox.CopyOut(ctx, sandboxPath, hostPath)
}

// TestDockerClaudeSessionThroughMount runs the claude plugin, against a
// fake `claude` in a docker container whose user is not the host's, and
// then resumes its session in a second run. With the session directory
// mounted, the session lands where `claude --resume` looks on the host,
// cwd rewritten, companion directory included, with no copy through the
// sandbox (no Docker archive request), and the resumed session is one the
// container's user goes on writing. A provider without the Mounts
// capability, or one that leaves the mount out, gets the same results by
// copying.
func TestDockerClaudeSessionThroughMount(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the runs make their session directories
	for _, tc := range []struct {
		name               string
		noMounts, leaveOut bool
	}{{"mounted", false, false}, {"copied", true, false}, {"left-out", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home) // the host side of {home}
			ref, copies := claudeDocker(t, copyCounting{noMounts: tc.noMounts, leaveOut: tc.leaveOut})
			repo := newRepo(t)
			o := options(repo, ref, claudeAgent(t), &buffer{})
			o.MaxIterations = 1
			o.Env = map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}
			res := run(t, o)
			hostPath := filepath.Join(home, ".claude", "projects", agentkit.EncodeClaudeCwd(realpath(t, repo)), claudeSessionID+".jsonl")
			if len(res.Iterations) != 1 || res.Iterations[0].SessionFilePath != hostPath {
				t.Fatalf("iterations %+v, want the session captured to %s", res.Iterations, hostPath)
			}
			got := hostSession(t, hostPath)
			if !strings.Contains(got, `"cwd":"`+realpath(t, repo)+`"`) || strings.Contains(got, "/home/agent/workspace") || !strings.Contains(got, `"uid":"1000"`) {
				t.Fatalf("captured session %s: want the host repo as cwd, written by uid 1000", got)
			}
			if sub := hostSession(t, filepath.Join(strings.TrimSuffix(hostPath, ".jsonl"), "subagents", "agent-a1.jsonl")); !strings.Contains(sub, realpath(t, repo)) {
				t.Errorf("companion file %s: want the host cwd", sub)
			}
			copied := tc.noMounts || tc.leaveOut
			if n := copies.Load(); copied == (n == 0) {
				t.Errorf("%d copies through the sandbox (copying expected: %v)", n, copied)
			}

			copies.Store(0)
			o.ResumeSession = claudeSessionID
			res = run(t, o)
			if len(res.Iterations) != 1 || res.Iterations[0].SessionFilePath != hostPath {
				t.Fatalf("resumed run's iterations %+v", res.Iterations)
			}
			if lines := strings.Count(hostSession(t, hostPath), "\n") + 1; lines != 2 {
				t.Errorf("resumed session has %d lines, want 2 (the first run's and the resumed one's)", lines)
			}
			if n := copies.Load(); copied == (n == 0) {
				t.Errorf("resume and capture made %d copies through the sandbox (copying expected: %v)", n, copied)
			}
			if leftovers, _ := filepath.Glob(filepath.Join(tmp, "sanddune-sessions-*")); len(leftovers) != 0 {
				t.Errorf("session directories left after the runs: %v", leftovers)
			}
		})
	}
}

// claudeDocker is the docker sandbox over the plugin protocol (see
// dockerSandbox), as uid 1000 (not the host's), with the fake claude at
// /fake/claude and the claude stream fixture in /fixture, wrapped in w
// (which counts its copies).
func claudeDocker(t *testing.T, w copyCounting) (ref core.SandboxRef, copies *atomic.Int32) {
	t.Helper()
	ref = dockerSandbox(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(inContainerClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	fixture, err := filepath.Abs("../../plugins/claude/testdata")
	if err != nil {
		t.Fatal(err)
	}
	mount := func(host, sandbox string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"host_path": cty.StringVal(host), "sandbox_path": cty.StringVal(sandbox), "readonly": cty.True})
	}
	attrs := ref.Config.Value.AsValueMap()
	attrs["container_uid"], attrs["container_gid"] = cty.NumberIntVal(1000), cty.NumberIntVal(1000)
	attrs["mount"] = cty.ListVal([]cty.Value{mount(bin, "/fake"), mount(fixture, "/fixture")})
	ref.Config = sdk.Config{Value: cty.ObjectVal(attrs)}
	w.SandboxProvider, w.copies = docker.New(), &atomic.Int32{}
	ref.Provider = plugintest.Sandbox(t, w)
	return ref, w.copies
}

// claudeAgent is the claude plugin running /fake/claude.
func claudeAgent(t *testing.T) core.AgentRef {
	return core.AgentRef{Address: "agent.claude.test", Plugin: "claude", Provider: plugintest.Agent(t, claude.New()),
		Config: sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"binary": cty.StringVal("/fake/claude")})}}
}

func realpath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
