package agentkit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/zclconf/go-cty/cty"
)

func TestEncodeClaudeCwd(t *testing.T) {
	t.Parallel()
	long := "/home/agent/" + strings.Repeat("very_long.dir name/", 12) + "repo"
	for in, want := range map[string]string{
		"/home/agent/workspace":  "-home-agent-workspace",
		"/home/agent/my_repo.v2": "-home-agent-my-repo-v2",
		"/tmp/My Repo_v1.2/ü😀x":  "-tmp-My-Repo-v1-2----x", // ü is one UTF-16 unit, 😀 two
		// Reference values computed with Claude Code 2.1.197's own function.
		long: "-home-agent-very-long-dir-name-very-long-dir-name-very-long-dir-name-very-long-dir-name-very-long-dir-name-very-long-dir-name-very-long-dir-name-very-long-dir-name-very-long-dir-name-very-long-dir-nam-c96ti5",
	} {
		if got := EncodeClaudeCwd(in); got != want {
			t.Errorf("EncodeClaudeCwd(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEncodePiCwd(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/home/agent/workspace": "--home-agent-workspace--",
		"/tmp/my repo_v1.2":     "--tmp-my repo_v1.2--",
		`C:\Users\me\repo`:      "--C--Users-me-repo--",
		`\\server\share`:        "---server-share--",
		"relative/dir":          "--relative-dir--",
	} {
		if got := EncodePiCwd(in); got != want {
			t.Errorf("EncodePiCwd(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewriteJSONLCwd(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"type":"user","cwd":"/home/agent/workspace","message":{"cwd":"/home/agent/workspace"}}`,
		`{"cwd" : "/home/agent/workspace/src", "x":1}`,
		`{"cwd":"/home/agent/workspace2"}`,
		`{"type":"turn_context","payload":{"model":"m","cwd":"/home/agent/workspace"}}`,
		`not json at all`,
		`{"torn":"line`,
		`["array"]`,
		``,
		`{"cwd":"/home/agent/workspace","cwd":"/home/agent/workspace"}`,
		`{"type":"session","cwd":"\/home\/agent\/workspace"}`,
	}, "\n") + "\n"
	want := strings.Join([]string{
		`{"type":"user","cwd":"/h/my repo_v1.2 <x>","message":{"cwd":"/home/agent/workspace"}}`,
		`{"cwd" : "/h/my repo_v1.2 <x>/src", "x":1}`,
		`{"cwd":"/home/agent/workspace2"}`,
		`{"type":"turn_context","payload":{"model":"m","cwd":"/h/my repo_v1.2 <x>"}}`,
		`not json at all`,
		`{"torn":"line`,
		`["array"]`,
		``,
		`{"cwd":"/h/my repo_v1.2 <x>","cwd":"/h/my repo_v1.2 <x>"}`,
		`{"type":"session","cwd":"/h/my repo_v1.2 <x>"}`,
	}, "\n") + "\n"
	got := string(rewriteJSONLCwd([]byte(in), "/home/agent/workspace/", "/h/my repo_v1.2 <x>", "cwd", "payload.cwd"))
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The reverse and a target below the source terminate and round-trip.
	back := string(rewriteJSONLCwd([]byte(got), "/h/my repo_v1.2 <x>", "/home/agent/workspace", "cwd", "payload.cwd"))
	if !strings.Contains(back, `{"cwd" : "/home/agent/workspace/src", "x":1}`) {
		t.Errorf("reverse rewrite: %s", back)
	}
	// Any depth, arrays of strings, and lines whose quick check must not
	// skip them (escaped slashes).
	deepIn := `{"type":"event_msg","payload":{"thread_settings":{"cwd":"/w","runtime_workspace_roots":["/w", "/other","/w/sub"]}},"list":[{"cwd":"/w"}],"cwd":5}` + "\n" +
		`{"cwd":"\/w"}`
	deepWant := `{"type":"event_msg","payload":{"thread_settings":{"cwd":"/h","runtime_workspace_roots":["/h","/other","/h/sub"]}},"list":[{"cwd":"/h"}],"cwd":5}` + "\n" +
		`{"cwd":"/h"}`
	if got := string(rewriteJSONLCwd([]byte(deepIn), "/w", "/h", "**.cwd", "**.runtime_workspace_roots")); got != deepWant {
		t.Errorf("deep rewrite:\n got %s\nwant %s", got, deepWant)
	}
	nested := string(rewriteJSONLCwd([]byte(`{"cwd":"/a"}`), "/a", "/a/b", "cwd"))
	if nested != `{"cwd":"/a/b"}` {
		t.Errorf("nested target: %s", nested)
	}
	// No trailing newline is added or removed.
	if got := string(rewriteJSONLCwd([]byte(`{"cwd":"/a"}`+"\n"+`{"cwd":"/a"}`), "/a", "/b", "cwd")); got != `{"cwd":"/b"}`+"\n"+`{"cwd":"/b"}` {
		t.Errorf("no trailing newline: %q", got)
	}
}

func TestToolArg(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ tool, input, want string }{
		{"Bash", `{"command":"npm test","description":"Run tests"}`, "npm test"},
		{"bash", `{"command":"cat <<EOF\nhello\nEOF"}`, "cat <<EOF …"},
		{"Edit", `{"file_path":"/w/src/sum.ts","old_string":"a"}`, "/w/src/sum.ts"},
		{"edit", `{"filePath":"/w/src/sum.ts"}`, "/w/src/sum.ts"},
		{"edit", `{"path":"src/sum.ts","edits":[]}`, "src/sum.ts"},
		{"Grep", `{"pattern":"TODO","path":"src"}`, "TODO"},
		{"WebFetch", `{"url":"https://x.y","prompt":"p"}`, "https://x.y"},
		{"WebSearch", `{"query":"go cty"}`, "go cty"},
		{"Agent", `{"description":"Explore","prompt":"long"}`, "Explore"},
		{"TodoWrite", `{"todos":[]}`, ""},
		{"Bash", `not json`, ""},
		{"Bash", `{"command":` + string(marshalString(strings.Repeat("x", 300))) + `}`, strings.Repeat("x", 200) + " …"},
	} {
		if got := ToolArg(c.tool, json.RawMessage(c.input)); got != c.want {
			t.Errorf("ToolArg(%s, %s) = %q, want %q", c.tool, c.input, got, c.want)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	var v map[string]any
	for _, bad := range []string{"", "text", `{"a":`, `[1]`, `"s"`, `{`} {
		if DecodeObject([]byte(bad), &v) {
			t.Errorf("DecodeObject(%q) = true", bad)
		}
	}
	if !DecodeObject([]byte(` {"a":1} `), &v) || v["a"] != float64(1) {
		t.Errorf("DecodeObject failed: %v", v)
	}
}

func TestConfigAccessors(t *testing.T) {
	t.Parallel()
	cfg := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{
		"model":            cty.StringVal("opus"),
		"effort":           cty.NullVal(cty.String),
		"capture_sessions": cty.False,
		"env":              cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1"), "B": cty.NullVal(cty.String)}),
	})}
	if String(cfg, "model") != "opus" || String(cfg, "effort") != "" || String(cfg, "missing") != "" {
		t.Error("String")
	}
	if boolAttr(cfg, "capture_sessions", true) || !boolAttr(cfg, "missing", true) {
		t.Error("Bool")
	}
	if m := stringMap(cfg, "env"); len(m) != 1 || m["A"] != "1" {
		t.Errorf("stringMap = %v", m)
	}
	if String(sdk.Config{}, "model") != "" || stringMap(sdk.Config{Value: cty.NullVal(cty.DynamicPseudoType)}, "env") != nil {
		t.Error("null config")
	}
	if ds := sdk.CheckEnv(map[string]string{"OK_1": "", "1BAD": "", "A=B": ""}, "env"); len(ds) != 2 || ds[0].Attribute != "env" {
		t.Errorf("CheckEnv = %v", ds)
	}
	if ds := CheckOneOf("huge", []string{"low", "high"}, "effort"); len(ds) != 1 || ds[0].Attribute != "effort" {
		t.Errorf("CheckOneOf = %v", ds)
	}
	for _, id := range []string{"3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48", "ses_1a2b3c", "019e8c52.x"} {
		if err := CheckSessionID(id); err != nil {
			t.Error(err)
		}
	}
	for _, id := range []string{"", "-x", "a/b", "a*", "a b", "../x"} {
		if CheckSessionID(id) == nil {
			t.Errorf("CheckSessionID(%q) accepted", id)
		}
	}
}
