package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/agentcheck"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

const session = "019e8c41-7a2b-7d13-9c55-6f0e2b8a4d17"

func TestBuildCommandGolden(t *testing.T) {
	t.Parallel()
	full := map[string]cty.Value{"model": cty.StringVal("gpt-5.4"), "effort": cty.StringVal("xhigh")}
	agentkittest.CheckCommands(t, New(), "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print default model", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print base_url resume", Attrs: map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, SkipPermissions: true}},
		{Name: "interactive base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "print model and effort in sandbox", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "print resume", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, SkipPermissions: true}},
		{Name: "print resume without sandbox", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session}},
		{Name: "print resume on iteration 2 is ignored", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session, SkipPermissions: true}},
		{Name: "print fork", Attrs: map[string]cty.Value{"effort": cty.StringVal("low")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true, SkipPermissions: true}},
		{Name: "print custom binary", Attrs: map[string]cty.Value{"binary": cty.StringVal("/usr/local/bin/codex")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "interactive without sandbox", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "interactive in sandbox", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true}},
		{Name: "interactive resume", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session}},
		{Name: "interactive fork", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session, ForkSession: true, SkipPermissions: true}},
		{Name: "interactive no prompt", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	})
}

// TestResumePrelude runs a resume command's prelude against a session
// rollout: it prints the rollout's last token_count line, which the parser
// takes as the thread's total, then runs the CLI (echo here) with stdin.
func TestResumePrelude(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "07", "01")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rollout := strings.Join([]string{
		`{"timestamp":"2026-07-01T10:00:00.000Z","type":"session_meta","payload":{"id":"` + session + `","cwd":"/w"}}`,
		`{"timestamp":"2026-07-01T10:00:01.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}}}`,
		`{"timestamp":"2026-07-01T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"say {\"type\":\"token_count\"}"}]}}`,
		tokenCountLine,
		`{"timestamp":"2026-07-01T10:00:10.000Z","type":"event_msg","payload":{"type":"task_complete"}}`,
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-07-01T10-00-00-"+session+".jsonl"), []byte(rollout), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, fork := range []bool{false, true} {
		cfg := agentkittest.Config(t, New(), map[string]cty.Value{"binary": cty.StringVal("cat")})
		cmd, err := New().BuildCommand(context.Background(), sdk.CommandRequest{Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: fork, Prompt: "go on"})
		if err != nil {
			t.Fatal(err)
		}
		// cat reads the prompt from stdin; its arguments are dropped.
		argv := cmd.Argv[:4:4]
		c := exec.Command(argv[0], append(argv[1:], "cat")...)
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "CODEX_HOME=" + home}
		c.Stdin = bytes.NewReader(cmd.Stdin)
		out, err := c.Output()
		if err != nil {
			t.Fatalf("fork=%v: %v", fork, err)
		}
		if want := tokenCountLine + "\ngo on"; string(out) != want {
			t.Fatalf("fork=%v: output\n%s\nwant\n%s", fork, out, want)
		}
		p := NewParser()
		var got []sdk.Event
		for _, l := range append(strings.Split(string(out), "\n")[:1], `{"type":"turn.completed","usage":{"input_tokens":2186,"cached_input_tokens":600,"output_tokens":95}}`) {
			got = append(got, p.Parse([]byte(l))...)
		}
		want := []sdk.Event{{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 1207, CacheReadInputTokens: 100, OutputTokens: 41}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fork=%v: events %+v (usage %+v), want usage %+v", fork, got, got[0].Usage, want[0].Usage)
		}
	}
}

func TestBuildCommandErrors(t *testing.T) {
	t.Parallel()
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	agentcheck.Configure(t, New(), []agentcheck.Case{
		{Name: "defaults"},
		{Name: "base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}},
		{Name: "ftp base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("ftp://127.0.0.1/")}, Want: []string{"base_url"}},
		{Name: "xhigh", Attrs: map[string]cty.Value{"model": cty.StringVal("gpt-5.4"), "effort": cty.StringVal("xhigh")}},
		{Name: "claude's max is not codex's", Attrs: map[string]cty.Value{"effort": cty.StringVal("max")}, Want: []string{"effort"}},
		{Name: "empty model", Attrs: map[string]cty.Value{"model": cty.StringVal("")}, Want: []string{"model"}},
		{Name: "bad env", Attrs: map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"9LIVES": cty.StringVal("")})}, Want: []string{"env"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	d := agentcheck.Describe(t, New(), nil)
	want := sdk.AgentDescription{
		RequiredEnv:     [][]string{{"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"}},
		Sessions:        &sdk.SessionStorage{PathPattern: "{home}/.codex/sessions/*/*/*/rollout-*-{session_id}.jsonl"},
		CaptureSessions: true,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           []string{"api.openai.com"},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
}

func TestRewriteSession(t *testing.T) {
	t.Parallel()
	// The real rollout shape: cwd sits in session_meta.payload and
	// turn_context.payload.
	in := strings.Join([]string{
		`{"timestamp":"2026-07-01T10:00:00.000Z","type":"session_meta","payload":{"id":"` + session + `","timestamp":"2026-07-01T10:00:00.000Z","cwd":"/home/agent/workspace","originator":"codex_exec","cli_version":"0.169.0"}}`,
		`{"timestamp":"2026-07-01T10:00:01.000Z","type":"turn_context","payload":{"cwd":"/home/agent/workspace","approval_policy":"never","model":"gpt-5.4"}}`,
		`{"timestamp":"2026-07-01T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"cwd is /home/agent/workspace"}]}}`,
		`{"timestamp":"2026-07-01T10:00:03.000Z","type":"turn_context","payload":{"cwd":"/home/agent/workspace/sub dir"}}`,
		`{"timestamp":"2026-07-01T10:00:0`,
	}, "\n") + "\n"
	got := agentkittest.Rewrite(t, New(), []byte(in), "/home/agent/workspace", "/srv/My Repo_v1.2")
	want := strings.ReplaceAll(in, `"cwd":"/home/agent/workspace`, `"cwd":"/srv/My Repo_v1.2`)
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRewriteRealRollout rewrites a rollout written by Codex 0.169.0 itself
// (in /tmp/agcompat/ws) and back.
func TestRewriteRealRollout(t *testing.T) {
	t.Parallel()
	const sandbox, host = "/tmp/agcompat/ws", "/srv/My Repo_v1.2"
	data, err := os.ReadFile("testdata/rollout-0.169.0.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := agentkittest.Rewrite(t, New(), data, sandbox, host)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("rewritten line is not JSON: %v", err)
		}
		walkPaths(v, "", func(key, s string) {
			if key == "cwd" || key == "runtime_workspace_roots" {
				if strings.HasPrefix(s, sandbox) {
					t.Errorf("%s still %q", key, s)
				}
				if s == host {
					n++
				}
			}
		})
	}
	if n != 6 {
		t.Errorf("%d cwd and workspace root values rewritten, want 6", n)
	}
}

// walkPaths calls f for every string in v with the key it sits under.
func walkPaths(v any, key string, f func(key, s string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walkPaths(e, k, f)
		}
	case []any:
		for _, e := range x {
			walkPaths(e, key, f)
		}
	case string:
		f(key, x)
	}
}
