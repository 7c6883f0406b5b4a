package codex

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/zclconf/go-cty/cty"
)

const session = "019e8c41-7a2b-7d13-9c55-6f0e2b8a4d17"

func TestBuildCommandGolden(t *testing.T) {
	full := map[string]cty.Value{"model": cty.StringVal("gpt-5.4"), "effort": cty.StringVal("xhigh")}
	cases := []cmdCase{
		{"print default model", nil, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{"print model and effort in sandbox", full, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true, RunsAsRoot: true}},
		{"print resume", full, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, SkipPermissions: true}},
		{"print resume without sandbox", nil, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session}},
		{"print resume on iteration 2 is ignored", nil, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session, SkipPermissions: true}},
		{"print fork", map[string]cty.Value{"effort": cty.StringVal("low")}, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true, SkipPermissions: true}},
		{"print custom binary", map[string]cty.Value{"binary": cty.StringVal("/usr/local/bin/codex")}, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{"interactive without sandbox", full, sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{"interactive in sandbox", nil, sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true}},
		{"interactive resume", full, sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session}},
		{"interactive fork", nil, sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session, ForkSession: true, SkipPermissions: true}},
		{"interactive no prompt", nil, sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	}
	checkGolden(t, "testdata/commands.golden", buildAll(t, cases))
}

func TestBuildCommandErrors(t *testing.T) {
	cfg := testConfig(t, nil)
	for name, req := range map[string]sdk.CommandRequest{
		"fork without session": {Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ForkSession: true},
		"flag-like session id": {Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: "-a"},
		"unknown mode":         {Config: cfg, Mode: "batch"},
	} {
		if _, err := New().BuildCommand(context.Background(), req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestConfigure(t *testing.T) {
	checkConfigure(t, []configureCase{
		{"defaults", nil, nil},
		{"xhigh", map[string]cty.Value{"model": cty.StringVal("gpt-5.4"), "effort": cty.StringVal("xhigh")}, nil},
		{"claude's max is not codex's", map[string]cty.Value{"effort": cty.StringVal("max")}, []string{"effort"}},
		{"empty model", map[string]cty.Value{"model": cty.StringVal("")}, []string{"model"}},
		{"bad env", map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"9LIVES": cty.StringVal("")})}, []string{"env"}},
	})
}

func TestDescribe(t *testing.T) {
	d, err := New().Describe(context.Background(), testConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := sdk.AgentDescription{
		RequiredEnv: [][]string{{"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN"}},
		Sessions:    &sdk.SessionStorage{PathPattern: "{home}/.codex/sessions/*/*/*/rollout-*-{session_id}.jsonl"},
		Resume:      true,
		Fork:        true,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
}

func TestRewriteSession(t *testing.T) {
	// The real rollout shape: cwd sits in session_meta.payload and
	// turn_context.payload.
	in := strings.Join([]string{
		`{"timestamp":"2026-07-01T10:00:00.000Z","type":"session_meta","payload":{"id":"` + session + `","timestamp":"2026-07-01T10:00:00.000Z","cwd":"/home/agent/workspace","originator":"codex_exec","cli_version":"0.169.0"}}`,
		`{"timestamp":"2026-07-01T10:00:01.000Z","type":"turn_context","payload":{"cwd":"/home/agent/workspace","approval_policy":"never","model":"gpt-5.4"}}`,
		`{"timestamp":"2026-07-01T10:00:02.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"cwd is /home/agent/workspace"}]}}`,
		`{"timestamp":"2026-07-01T10:00:03.000Z","type":"turn_context","payload":{"cwd":"/home/agent/workspace/sub dir"}}`,
		`{"timestamp":"2026-07-01T10:00:0`,
	}, "\n") + "\n"
	got, err := New().RewriteSession(context.Background(), sdk.RewriteSessionRequest{Data: []byte(in), FromCwd: "/home/agent/workspace", ToCwd: "/srv/My Repo_v1.2"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(in, `"cwd":"/home/agent/workspace`, `"cwd":"/srv/My Repo_v1.2`)
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRewriteRealRollout rewrites a rollout written by Codex 0.169.0 itself
// (in /tmp/agcompat/ws) and back.
func TestRewriteRealRollout(t *testing.T) {
	data, err := os.ReadFile("testdata/rollout-0.169.0.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const sandbox, host = "/tmp/agcompat/ws", "/srv/My Repo_v1.2"
	rewrite := func(data []byte, from, to string) []byte {
		out, err := New().RewriteSession(context.Background(), sdk.RewriteSessionRequest{Data: data, FromCwd: from, ToCwd: to})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := rewrite(data, sandbox, host)
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
	if back := rewrite(got, host, sandbox); string(back) != string(data) {
		t.Error("rewriting back does not give the original rollout")
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
