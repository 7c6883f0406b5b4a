package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

func TestMountDir(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string]string{
		"{home}/.claude/projects/{cwd_encoded}/{session_id}.jsonl":     "~/.claude/projects",
		"{home}/.codex/sessions/*/*/*/rollout-*-{session_id}.jsonl":    "~/.codex/sessions",
		"{home}/.pi/agent/sessions/{cwd_encoded}/*_{session_id}.jsonl": "~/.pi/agent/sessions",
		"{home}/.copilot/session-state/{session_id}/events.jsonl":      "~/.copilot/session-state",
		"{home}/.jsonl/sessions/{session_id}.jsonl":                    "~/.jsonl/sessions",
		"{home}/.x/static.jsonl":                                       "~/.x",
		"{home}/{session_id}.jsonl":                                    "",
		"{home}/s-*/{session_id}.jsonl":                                "",
		"{home}/../etc/{session_id}":                                   "",
		"/var/sessions/{session_id}.jsonl":                             "",
		"{cwd}/.sessions/{session_id}.jsonl":                           "",
	} {
		got, ok := MountDir(sdk.SessionStorage{PathPattern: pattern})
		if got != want || ok != (want != "") {
			t.Errorf("MountDir(%q) = %q, %v; want %q", pattern, got, ok, want)
		}
	}
}

// mounted is the Transfer of session id stored at s, in env e whose
// sandbox directory ~/rel is a host directory (the sandbox sees it
// through a symlink, as through a bind mount), and that directory.
func (e env) mounted(t *testing.T, s sdk.SessionStorage, id, rel string) (Transfer, string) {
	hostDir := t.TempDir()
	dir := filepath.Join(e.sb.home, rel)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostDir, dir); err != nil {
		t.Fatal(err)
	}
	tr := e.transfer(s, id)
	tr.Mounts = []sdk.Mount{{HostPath: hostDir, SandboxPath: dir}}
	return tr, hostDir
}

// mountedEnv is an env whose sandbox's ~/.claude/projects is mounted, the
// Transfer of claude session id, and the host directory of its project.
func mountedEnv(t *testing.T, id string) (env, Transfer, string) {
	e := newEnv(t)
	tr, hostDir := e.mounted(t, claudeStorage, id, ".claude/projects")
	return e, tr, filepath.Join(hostDir, agentkit.EncodeClaudeCwd(e.sb.repo))
}

// TestMountedCaptureResumeRoundTripFake: with the session directory
// mounted, capture and resume read and write the host directory: no copy
// goes through the sandbox (and capture runs nothing in it), the cwd is
// rewritten both ways as when copying, and what resume makes belongs to
// the mount's owner (the sandbox's user, who goes on writing it).
func TestMountedCaptureResumeRoundTripFake(t *testing.T) {
	t.Parallel()
	const id = "7a0e4c1d-mounted"
	e, tr, dir := mountedEnv(t, id)
	original := `{"type":"user","cwd":"` + e.sb.repo + `","sessionId":"` + id + `"}` + "\n"
	subagent := `{"cwd":"` + e.sb.repo + `","isSidechain":true}` + "\n"
	write(t, filepath.Join(dir, id+".jsonl"), original)
	write(t, filepath.Join(dir, id, "subagents", "agent-a1.jsonl"), subagent)

	hostPath, err := Capture(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(e.hostHome, ".claude", "projects", agentkit.EncodeClaudeCwd(e.hostRepo), id+".jsonl"); hostPath != want {
		t.Fatalf("host path %q, want %q", hostPath, want)
	}
	if got, want := read(t, hostPath), strings.ReplaceAll(original, e.sb.repo, e.hostRepo); got != want {
		t.Errorf("captured\n%s\nwant\n%s", got, want)
	}
	if got := read(t, filepath.Join(filepath.Dir(hostPath), id, "subagents", "agent-a1.jsonl")); !strings.Contains(got, `"cwd":"`+e.hostRepo+`"`) {
		t.Errorf("subagent transcript not captured with host cwd: %s", got)
	}
	if c, x := e.sb.copies.Load(), e.sb.execs.Load(); c != 0 || x != 0 {
		t.Errorf("capture from a mount made %d copies and %d execs through the sandbox, want none", c, x)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	owner := os.Getuid()
	if owner == 0 { // the sandbox's user is someone else
		owner = 4321
		if err := os.Chown(tr.Mounts[0].HostPath, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	e.sb.execs.Store(0)
	sbPath, err := PrepareResume(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(e.sb.home, ".claude", "projects", agentkit.EncodeClaudeCwd(e.sb.repo), id+".jsonl"); sbPath != want {
		t.Errorf("sandbox path %q, want %q", sbPath, want)
	}
	if got := read(t, filepath.Join(dir, id+".jsonl")); got != original {
		t.Errorf("resumed\n%s\nwant\n%s", got, original)
	}
	if got := read(t, filepath.Join(dir, id, "subagents", "agent-a1.jsonl")); got != subagent {
		t.Errorf("subagent transcript resumed as %q", got)
	}
	if c, x := e.sb.copies.Load(), e.sb.execs.Load(); c != 0 || x != 0 {
		t.Errorf("resume into a mount made %d copies and %d execs through the sandbox, want none", c, x)
	}
	for _, p := range []string{dir, filepath.Join(dir, id+".jsonl"), filepath.Join(dir, id, "subagents"), filepath.Join(dir, id, "subagents", "agent-a1.jsonl")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != owner {
			t.Errorf("resumed %s owned by uid %d, want %d (the mount's)", p, uid, owner)
		}
	}
}

// TestMountedCaptureRefusesASymlinkOutFake: a session file the sandbox made
// a symlink to a host file outside the mount is not read through it.
func TestMountedCaptureRefusesASymlinkOutFake(t *testing.T) {
	t.Parallel()
	const id = "7a0e4c1d-symlink"
	e, tr, dir := mountedEnv(t, id)
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, `{"cwd":"secret"}`+"\n")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, id+".jsonl")); err != nil {
		t.Fatal(err)
	}
	hostPath, err := Capture(context.Background(), tr)
	if err == nil {
		t.Fatalf("captured %s through a symlink out of the mount: %q", hostPath, read(t, hostPath))
	}
	if _, err := os.Stat(filepath.Join(e.hostHome, ".claude")); err == nil {
		t.Errorf("something was written under the host's ~/.claude")
	}
}

// TestMountedCodexCaptureListsOnTheHostFake: a pattern with globs is
// looked for in the mounted directory on the host, newest match first,
// with nothing run in the sandbox.
func TestMountedCodexCaptureListsOnTheHostFake(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const id = "019e8c41-mounted"
	tr, hostDir := e.mounted(t, codexStorage, id, ".codex/sessions")
	older := filepath.Join(hostDir, "2026", "06", "30", "rollout-2026-06-30T10-00-00-"+id+".jsonl")
	newer := filepath.Join("2026", "07", "01", "rollout-2026-07-01T10-00-00-"+id+".jsonl")
	write(t, older, `{"payload":{"cwd":"old"}}`+"\n")
	write(t, filepath.Join(hostDir, newer), `{"payload":{"cwd":"`+e.sb.repo+`"}}`+"\n")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(older, past, past); err != nil {
		t.Fatal(err)
	}
	hostPath, err := Capture(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(e.hostHome, ".codex", "sessions", newer); hostPath != want {
		t.Fatalf("host path %q, want the newest match %q", hostPath, want)
	}
	if got := read(t, hostPath); got != `{"payload":{"cwd":"`+e.hostRepo+`"}}`+"\n" {
		t.Errorf("captured %s", got)
	}
	if c, x := e.sb.copies.Load(), e.sb.execs.Load(); c != 0 || x != 0 {
		t.Errorf("capture from a mount made %d copies and %d execs through the sandbox, want none", c, x)
	}
}
