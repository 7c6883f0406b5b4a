package session

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// The tests in this file run the real claude and pi CLIs installed by
// scripts/agents-compat.sh (SANDDUNE_AGENTS_BIN names their bin directory)
// against sessions moved by Capture and PrepareResume. No credentials are
// given, so the CLIs stop at "not logged in" after finding the session, and
// every API base URL points at a closed local port: no model is contacted.

func agentsBin(t *testing.T) string {
	bin := os.Getenv("SANDDUNE_AGENTS_BIN")
	if bin == "" {
		t.Skip("SANDDUNE_AGENTS_BIN is not set: run scripts/agents-compat.sh to check sessions against the real CLIs")
	}
	return bin
}

// runCLI runs a real CLI in dir with HOME=home and no credentials.
func runCLI(t *testing.T, dir, home, stdin string, argv ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LC_ALL=C", "IS_SANDBOX=1",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"PI_OFFLINE=1", "PI_TELEMETRY=0",
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return out.String(), code
}

// claudeInit returns the session id of a stream-json run's init line.
func claudeInit(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		var v struct {
			Type, Subtype string
			SessionID     string `json:"session_id"`
		}
		if json.Unmarshal([]byte(l), &v) == nil && v.Type == "system" && v.Subtype == "init" {
			return v.SessionID
		}
	}
	t.Fatalf("no init line in claude output:\n%s", out)
	return ""
}

// TestCompatClaudeSessionRoundTripFake: a session written by the real
// claude in one sandbox is captured to the host, where `claude --resume`
// finds it, then resumed and forked in another sandbox.
func TestCompatClaudeSessionRoundTripFake(t *testing.T) {
	t.Parallel()
	claude := filepath.Join(agentsBin(t), "claude")
	e := newEnv(t)
	print := []string{claude, "--print", "--verbose", "--output-format", "stream-json"}
	out, _ := runCLI(t, e.sb.repo, e.sb.home, "hello", print...)
	id := claudeInit(t, out)

	hostPath, err := Capture(context.Background(), e.transfer(claudeStorage, id))
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := os.ReadFile(hostPath)
	if !bytes.Contains(parent, []byte(`"cwd":"`+e.hostRepo+`"`)) {
		t.Fatalf("captured session has no host cwd:\n%s", parent)
	}
	out, _ = runCLI(t, e.hostRepo, e.hostHome, "again", append(print, "--resume", id)...)
	if strings.Contains(out, "No conversation found") || claudeInit(t, out) != id || !strings.Contains(out, "Not logged in") {
		t.Fatalf("claude --resume on the host did not find the captured session:\n%s", out)
	}

	// A second sandbox with other paths.
	e2 := newEnv(t)
	e2.hostRepo, e2.hostHome = e.hostRepo, e.hostHome
	if _, err := PrepareResume(context.Background(), e2.transfer(claudeStorage, id)); err != nil {
		t.Fatal(err)
	}
	out, _ = runCLI(t, e2.sb.repo, e2.sb.home, "again", append(print, "--resume", id)...)
	if strings.Contains(out, "No conversation found") || claudeInit(t, out) != id {
		t.Fatalf("claude --resume in the sandbox did not find the resumed session:\n%s", out)
	}
	out, _ = runCLI(t, e2.sb.repo, e2.sb.home, "fork", append(print, "--resume", id, "--fork-session")...)
	forked := claudeInit(t, out)
	if forked == id || strings.Contains(out, "No conversation found") {
		t.Fatalf("fork did not start a new session:\n%s", out)
	}
	parent, _ = os.ReadFile(hostPath) // the host resume above appended to it
	forkPath, err := Capture(context.Background(), e2.transfer(claudeStorage, forked))
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(hostPath); !bytes.Equal(now, parent) || forkPath == hostPath {
		t.Error("capturing the fork changed the parent session on the host")
	}
}

// TestCompatPiSessionRoundTripFake: pi writes no session without a model
// reply, so the sandbox session is made by hand; the real pi must find the
// captured file as a session of the host repo, and the resumed one in the
// sandbox (pi resolves --session before printing --help).
func TestCompatPiSessionRoundTripFake(t *testing.T) {
	t.Parallel()
	pi := filepath.Join(agentsBin(t), "pi")
	e := newEnv(t)
	const id = "019e8c52-3b4c-7e25-8d66-7a1f3c9b5e28"
	write(t, filepath.Join(e.sb.home, ".pi", "agent", "sessions", agentkit.EncodePiCwd(e.sb.repo), "2026-07-01T10-20-00-000Z_"+id+".jsonl"),
		`{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-07-01T10:20:00.000Z","cwd":"`+e.sb.repo+`"}`+"\n")
	if _, err := Capture(context.Background(), e.transfer(piStorage, id)); err != nil {
		t.Fatal(err)
	}
	check := func(dir, home string) {
		t.Helper()
		out, code := runCLI(t, dir, home, "", pi, "--mode", "json", "--model", "claude-sonnet-4-6", "--session", id, "--help")
		if code != 0 || strings.Contains(out, "No session found") || strings.Contains(out, "different project") {
			t.Fatalf("pi --session %s in %s: exit %d\n%s", id, dir, code, out)
		}
	}
	check(e.hostRepo, e.hostHome)
	e2 := newEnv(t)
	e2.hostRepo, e2.hostHome = e.hostRepo, e.hostHome
	if _, err := PrepareResume(context.Background(), e2.transfer(piStorage, id)); err != nil {
		t.Fatal(err)
	}
	check(e2.sb.repo, e2.sb.home)
}
