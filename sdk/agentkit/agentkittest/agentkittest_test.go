package agentkittest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// echo is an agent built on agentkit.Base: argv is the binary, then
// --resume <id>, then the prompt in interactive mode.
type echo struct{ agentkit.Base }

func newEcho() sdk.AgentProvider {
	return echo{agentkit.Base{Name: "echo", Version: "1", Model: "model", EnvExample: "KEY", SessionFields: []string{"cwd"}}}
}

func (echo) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	return agentkit.CheckCommon(cfg), nil
}

func (echo) Describe(context.Context, sdk.Config) (sdk.AgentDescription, error) {
	return sdk.AgentDescription{Resume: true}, nil
}

func (e echo) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	if req.Mode != sdk.ModePrint && req.Mode != sdk.ModeInteractive {
		return sdk.Command{}, errors.New("unknown mode")
	}
	c := e.Common(req.Config)
	argv := []string{c.Binary}
	session, err := agentkit.ResumeSession(req)
	if err != nil {
		return sdk.Command{}, err
	}
	if session != "" {
		argv = append(argv, "--resume", session)
	}
	if req.Mode == sdk.ModePrint {
		return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt), Env: c.Env}, nil
	}
	if req.Prompt != "" {
		argv = append(argv, req.Prompt)
	}
	return sdk.Command{Argv: argv, Env: c.Env}, nil
}

// recorder is a testing.TB that records failures; Fatal ends the goroutine
// run() started.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, format)
}
func (r *recorder) Error(args ...any)                 { r.Errorf("error") }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.Errorf("fatal"); runtime.Goexit() }

func run(t *testing.T, f func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msgs
}

func TestConfig(t *testing.T) {
	t.Parallel()
	cfg := Config(t, newEcho(), map[string]cty.Value{"model": cty.StringVal("m")})
	want := cty.ObjectVal(map[string]cty.Value{
		"model":  cty.StringVal("m"),
		"env":    cty.NullVal(cty.Map(cty.String)),
		"binary": cty.StringVal("echo"),
	})
	if !cfg.Value.RawEquals(want) {
		t.Errorf("Config = %#v", cfg.Value)
	}
	if msgs := run(t, func(tb testing.TB) { Config(tb, newEcho(), map[string]cty.Value{"bogus": cty.True}) }); len(msgs) != 1 {
		t.Errorf("unknown attribute: %v", msgs)
	}
}

func TestCheckCommands(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "commands.golden")
	cases := []CommandCase{
		{Name: "print", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "resume", Attrs: map[string]cty.Value{"binary": cty.StringVal("/e"), "env": cty.MapVal(map[string]cty.Value{"K": cty.StringVal("<v>")})}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: "s1", ForkSession: true}},
		{Name: "resume ignored", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: "s1"}},
		{Name: "interactive", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "hi"}},
		{Name: "interactive no prompt", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	}
	if msgs := run(t, func(tb testing.TB) { CheckCommands(tb, newEcho(), path, cases) }); len(msgs) != 1 || !strings.Contains(msgs[0], "go test -update creates it") {
		t.Errorf("missing golden file: %v", msgs)
	}
	*update = true
	CheckCommands(t, newEcho(), path, cases)
	*update = false
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"print","mode":"print","argv":["echo"],"stdin":"` + strings.ReplaceAll(defaultPrompt, "\n", `\n`) + `"}
{"name":"resume","mode":"print","argv":["/e","--resume","s1"],"stdin":"` + strings.ReplaceAll(defaultPrompt, "\n", `\n`) + `","env":{"K":"<v>"},"resume_session_id":"s1","fork":true}
{"name":"resume ignored","mode":"print","argv":["echo"],"stdin":"` + strings.ReplaceAll(defaultPrompt, "\n", `\n`) + `"}
{"name":"interactive","mode":"interactive","argv":["echo","hi"],"stdin":"","prompt":"hi"}
{"name":"interactive no prompt","mode":"interactive","argv":["echo"],"stdin":""}
`
	if string(got) != want {
		t.Errorf("golden file:\n%s\nwant\n%s", got, want)
	}
	CheckCommands(t, newEcho(), path, cases)
	cases[0].Req.Prompt = "other"
	if msgs := run(t, func(tb testing.TB) { CheckCommands(tb, newEcho(), path, cases) }); len(msgs) != 1 || !strings.Contains(msgs[0], "is stale") {
		t.Errorf("stale golden file: %v", msgs)
	}
}

func TestCheckers(t *testing.T) {
	t.Parallel()
	p := newEcho()
	data := []byte(`{"cwd":"/a/b"}` + "\n")
	if got := Rewrite(t, p, data, "/a", "/c"); string(got) != `{"cwd":"/c/b"}`+"\n" {
		t.Errorf("rewrite: %s", got)
	}
	if got := Rewrite(t, p, data, "/x", "/c"); string(got) != string(data) {
		t.Errorf("rewrite of another cwd: %s", got)
	}
}
