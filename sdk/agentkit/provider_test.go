package agentkit

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

func TestBaseInfoAndSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := Base{
		Name: "mycli", Version: "1.2.3", Description: "my CLI",
		Model: "Model passed as --model.", ModelRequired: true,
		Attributes:      []sdk.Attribute{{Name: "effort", Type: cty.String}},
		EnvExample:      "MY_API_KEY",
		CaptureSessions: "Copy sessions.",
	}
	info, _ := b.Info(ctx)
	if !reflect.DeepEqual(info, sdk.Info{Version: "1.2.3", Description: "my CLI"}) {
		t.Errorf("Info = %+v", info)
	}
	s, _ := b.ConfigSchema(ctx)
	var names []string
	for _, a := range s.Attributes {
		names = append(names, a.Name)
	}
	if !reflect.DeepEqual(names, []string{"model", "effort", "env", "capture_sessions", "binary"}) {
		t.Fatalf("attributes %v", names)
	}
	model, env, capture, binary := s.Attributes[0], s.Attributes[2], s.Attributes[3], s.Attributes[4]
	if !model.Required || model.Description != "Model passed as --model." || model.Type != cty.String {
		t.Errorf("model %+v", model)
	}
	if env.Description != `Environment for the agent, e.g. { MY_API_KEY = "..." }.` || !env.Type.Equals(cty.Map(cty.String)) {
		t.Errorf("env %+v", env)
	}
	if capture.Default != cty.True || capture.Description != "Copy sessions." {
		t.Errorf("capture_sessions %+v", capture)
	}
	if binary.Default != cty.StringVal("mycli") || binary.Description != "Name or path of the mycli executable inside the sandbox." {
		t.Errorf("binary %+v", binary)
	}
	b.CaptureSessions = ""
	if s, _ := b.ConfigSchema(ctx); len(s.Attributes) != 4 || s.Attributes[3].Name != "binary" {
		t.Errorf("without capture_sessions: %+v", s.Attributes)
	}
	b.BaseURL = "set as MY_BASE_URL."
	s, _ = b.ConfigSchema(ctx)
	if a := s.Attributes[2]; a.Name != "base_url" || a.Type != cty.String || !strings.HasSuffix(a.Description, ": set as MY_BASE_URL.") {
		t.Errorf("base_url %+v", a)
	}
}

func TestBaseParseAndRewrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parse := func(b Base, lines ...string) []sdk.Event {
		ch := make(chan []byte, len(lines))
		for _, l := range lines {
			ch <- []byte(l)
		}
		close(ch)
		var evs []sdk.Event
		if err := b.ParseStream(ctx, sdk.Config{}, ch, func(e sdk.Event) { evs = append(evs, e) }); err != nil {
			t.Fatal(err)
		}
		return evs
	}
	if got := parse(Base{}, "a", `{"type":"result"}`); !reflect.DeepEqual(got, []sdk.Event{{Type: sdk.EventText, Text: "a"}, {Type: sdk.EventText, Text: `{"type":"result"}`}}) {
		t.Errorf("text parser: %+v", got)
	}
	b := Base{NewParser: func(sdk.Config) sdk.Parser { return sessionParser{} }}
	if got := parse(b, "s1"); !reflect.DeepEqual(got, []sdk.Event{{Type: sdk.EventSessionID, SessionID: "s1"}}) {
		t.Errorf("NewParser: %+v", got)
	}

	data := []byte(`{"cwd":"/a/b","payload":{"cwd":"/a"}}`)
	req := sdk.RewriteSessionRequest{Data: data, FromCwd: "/a", ToCwd: "/c"}
	if got, _ := (Base{}).RewriteSession(ctx, req); string(got) != string(data) {
		t.Errorf("no fields: %s", got)
	}
	if got, _ := (Base{SessionFields: []string{"payload.cwd"}}).RewriteSession(ctx, req); string(got) != `{"cwd":"/a/b","payload":{"cwd":"/c"}}` {
		t.Errorf("payload.cwd: %s", got)
	}
}

type sessionParser struct{}

func (sessionParser) Parse(line []byte) []sdk.Event {
	return []sdk.Event{{Type: sdk.EventSessionID, SessionID: string(line)}}
}
func (sessionParser) Close() []sdk.Event { return nil }

func TestCommon(t *testing.T) {
	t.Parallel()
	b := Base{Name: "mycli"}
	cfg := func(attrs map[string]cty.Value) sdk.Config { return sdk.Config{Value: cty.ObjectVal(attrs)} }
	c := b.Common(cfg(map[string]cty.Value{"model": cty.StringVal("m"), "env": cty.MapVal(map[string]cty.Value{"K": cty.StringVal("v")})}))
	if !reflect.DeepEqual(c, Common{Model: "m", Binary: "mycli", Env: map[string]string{"K": "v"}}) {
		t.Errorf("Common = %+v", c)
	}
	if c := b.Common(cfg(map[string]cty.Value{"binary": cty.StringVal("/opt/x")})); c.Binary != "/opt/x" {
		t.Errorf("binary %q", c.Binary)
	}
	ds := CheckCommon(cfg(map[string]cty.Value{
		"model":  cty.StringVal(""),
		"binary": cty.StringVal(""),
		"env":    cty.MapVal(map[string]cty.Value{"1BAD": cty.StringVal("")}),
	}))
	var attrs []string
	for _, d := range ds {
		attrs = append(attrs, d.Attribute)
	}
	if !reflect.DeepEqual(attrs, []string{"model", "binary", "env"}) {
		t.Errorf("CheckCommon attributes %v", attrs)
	}
	if ds := CheckCommon(cfg(map[string]cty.Value{"model": cty.NullVal(cty.String)})); len(ds) != 0 {
		t.Errorf("null model: %v", ds)
	}
	if ds := CheckCommon(cfg(map[string]cty.Value{"effort": cty.StringVal(""), "n": cty.NumberIntVal(0)})); len(ds) != 1 || ds[0].Attribute != "effort" {
		t.Errorf("an agent's own attribute set to \"\": %v", ds)
	}
	if c := b.Common(cfg(map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/v1")})); c.BaseURL != "http://127.0.0.1:8080/v1" {
		t.Errorf("base_url %q", c.BaseURL)
	}
}

// TestCheckBaseURL: a base_url that is not an absolute http(s) URL is
// reported once, at base_url ("" as empty), never with its credentials.
func TestCheckBaseURL(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://gateway.example/v1", true},
		{"http://127.0.0.1:8080", true},
		{"http://[::1]:8080/anthropic/", true},
		{"", false},
		{"gateway.example/v1", false},
		{"/v1", false},
		{"ftp://gateway.example", false},
		{"https://", false},
		{"https://user:sk-secret@gateway.example", false},
		{"http://bad host", false},
	} {
		ds := CheckCommon(sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"base_url": cty.StringVal(c.url)})})
		if c.ok != (len(ds) == 0) {
			t.Errorf("%q: diagnostics %v", c.url, ds)
			continue
		}
		if !c.ok && (len(ds) != 1 || ds[0].Attribute != "base_url" || strings.Contains(ds[0].Detail, "sk-secret")) {
			t.Errorf("%q: %+v", c.url, ds)
		}
	}
	if ds := CheckCommon(sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"base_url": cty.NullVal(cty.String)})}); len(ds) != 0 {
		t.Errorf("null: %v", ds)
	}
}

func TestResumeSession(t *testing.T) {
	t.Parallel()
	const id = "3f6c2a9e-8d41"
	for _, c := range []struct {
		name string
		req  sdk.CommandRequest
		want string
		err  bool
	}{
		{"none", sdk.CommandRequest{Iteration: 1}, "", false},
		{"first iteration", sdk.CommandRequest{Iteration: 1, ResumeSessionID: id}, id, false},
		{"interactive", sdk.CommandRequest{ResumeSessionID: id, ForkSession: true}, id, false},
		{"later iteration", sdk.CommandRequest{Iteration: 2, ResumeSessionID: id}, "", false},
		{"later iteration, bad id", sdk.CommandRequest{Iteration: 2, ResumeSessionID: "--x"}, "", false},
		{"fork without session", sdk.CommandRequest{Iteration: 2, ForkSession: true}, "", true},
		{"flag-like id", sdk.CommandRequest{Iteration: 1, ResumeSessionID: "--help"}, "", true},
	} {
		got, err := ResumeSession(c.req)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s: got %q, %v", c.name, got, err)
		}
	}
}

func TestStreamHelpers(t *testing.T) {
	for in, want := range map[string]string{
		`"boom"`:               "boom",
		`{"message":"boom"}`:   "boom",
		`{"Message":"boom"}`:   "boom",
		`{"message":7}`:        "",
		`[{"message":"boom"}]`: "",
		`5`:                    "",
		``:                     "",
	} {
		if got := MessageText(json.RawMessage(in)); got != want {
			t.Errorf("MessageText(%s) = %q, want %q", in, got, want)
		}
	}

	var s SessionOnce
	if s.Event("") != nil {
		t.Error("empty id reported")
	}
	if got := s.Event("a"); !reflect.DeepEqual(got, []sdk.Event{{Type: sdk.EventSessionID, SessionID: "a"}}) {
		t.Errorf("first id: %+v", got)
	}
	if s.Event("a") != nil || s.Event("b") != nil {
		t.Error("session reported twice")
	}

	var u UsageSum
	if u.Events() != nil {
		t.Error("usage without any")
	}
	u.Add(sdk.Usage{})
	if got := u.Events(); len(got) != 1 || *got[0].Usage != (sdk.Usage{}) {
		t.Errorf("zero usage: %+v", got)
	}
	u.Add(sdk.Usage{InputTokens: 1, OutputTokens: 2})
	u.Add(sdk.Usage{InputTokens: 3, CacheReadInputTokens: 4})
	if got := u.Events(); got[0].Type != sdk.EventUsage || *got[0].Usage != (sdk.Usage{InputTokens: 4, CacheReadInputTokens: 4, OutputTokens: 2}) {
		t.Errorf("sum: %+v", got[0].Usage)
	}
}
