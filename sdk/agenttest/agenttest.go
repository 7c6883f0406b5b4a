// Package agenttest is the conformance kit for agent providers: fixture
// replay (output lines in, expected events out) and generic checks, both
// through a real gRPC connection (sdk/plugintest).
//
//	func TestReplay(t plugintest.T) {
//		agenttest.Replay(t, myagent.New(), cty.NilVal, agenttest.Case{
//			Name:  "hello",
//			Lines: agenttest.ReadLines(t, "testdata/hello.jsonl"),
//			Want:  []sdk.Event{{Type: sdk.EventText, Text: "hello"}},
//		})
//	}
package agenttest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/internal/testkit"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// Case is one replay: stdout lines of an iteration and the events they
// must produce, in order.
type Case struct {
	Name  string
	Lines []string
	Want  []sdk.Event
}

// hangGuard bounds every call so that a broken provider fails instead of
// hanging the test binary.
const hangGuard = 2 * time.Minute

// Replay parses each case's lines with p under cfg (cty.NilVal: an empty
// block with defaults) and compares the events.
func Replay(t plugintest.T, p sdk.AgentProvider, cfg cty.Value, cases ...Case) {
	t.Helper()
	c := plugintest.Agent(t, p)
	config := configure(t, c, cfg)
	for _, tc := range cases {
		plugintest.Run(t, tc.Name, func(t plugintest.T) {
			got, err := parse(c, config, tc.Lines)
			if err != nil {
				t.Fatalf("ParseStream: %v", err)
			}
			if diff := testkit.DiffEvents(got, tc.Want); diff != "" {
				t.Errorf("events differ:\n%s", diff)
			}
		})
	}
}

// Parse returns the events p produces for lines under cfg, for tests that
// check events their own way.
func Parse(t plugintest.T, p sdk.AgentProvider, cfg cty.Value, lines []string) []sdk.Event {
	t.Helper()
	c := plugintest.Agent(t, p)
	events, err := parse(c, configure(t, c, cfg), lines)
	if err != nil {
		t.Fatalf("ParseStream: %v", err)
	}
	return events
}

// ReadLines reads a fixture file as lines without their newlines.
func ReadLines(t plugintest.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func configure(t plugintest.T, c sdk.AgentProvider, v cty.Value) sdk.Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	schema, err := c.ConfigSchema(ctx)
	if err != nil {
		t.Fatalf("ConfigSchema: %v", err)
	}
	cfg := testkit.Config(v, schema)
	diags, err := c.Configure(ctx, cfg)
	if err != nil {
		t.Fatalf("Configure: %v", err)
	}
	if diags.HasErrors() {
		t.Fatalf("Configure: %v", diags)
	}
	return cfg
}

func parse(c sdk.AgentProvider, cfg sdk.Config, lines []string) ([]sdk.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	ch := make(chan []byte)
	go func() {
		defer close(ch)
		for _, l := range lines {
			select {
			case ch <- []byte(l):
			case <-ctx.Done():
				return
			}
		}
	}()
	var events []sdk.Event
	err := c.ParseStream(ctx, cfg, ch, func(e sdk.Event) { events = append(events, e) })
	return events, err
}

// Run checks what every agent provider must do: sane Info, a config that
// configures, commands with exactly one of argv and shell that carry the
// prompt, and a parser that survives anything.
func Run(t plugintest.T, p sdk.AgentProvider, cfg cty.Value) {
	t.Helper()
	run(t, plugintest.Agent(t, p), cfg)
}

// RunBinary runs Run's checks against the agent component name of the
// plugin binary at path, written in any language, started as sanddune
// starts it.
func RunBinary(t plugintest.T, path, name string, cfg cty.Value) {
	t.Helper()
	_, agents := plugintest.Binary(t, path)
	c, ok := agents[name]
	if !ok {
		t.Fatalf("%s serves no agent component %q", path, name)
	}
	run(t, c, cfg)
}

func run(t plugintest.T, c sdk.AgentProvider, cfg cty.Value) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if problems := testkit.CheckInfo(info); len(problems) > 0 {
		t.Fatalf("Info: %s", strings.Join(problems, "; "))
	}
	config := configure(t, c, cfg)
	desc, err := c.Describe(ctx, config)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}

	plugintest.Run(t, "Describe", func(t plugintest.T) {
		for _, g := range desc.RequiredEnv {
			if len(g) == 0 || slices.Contains(g, "") {
				t.Errorf("RequiredEnv group %q is empty or has an empty key", g)
			}
		}
		if s := desc.Sessions; s != nil {
			if s.PathPattern == "" {
				t.Errorf("Sessions.PathPattern is empty")
			}
			if strings.Contains(s.PathPattern, "{cwd_encoded}") {
				enc, ok := c.(sdk.CwdEncoder)
				if !ok {
					t.Fatalf("Sessions.PathPattern uses {cwd_encoded}: the provider must implement sdk.CwdEncoder")
				}
				const cwd = "/home/agenttest/my repo.v1"
				if got, err := enc.EncodeCwd(context.Background(), cwd); err != nil || got == "" || strings.Contains(got, "/") {
					t.Errorf("EncodeCwd(%q) = %q, %v; want one path segment (Sessions.PathPattern uses {cwd_encoded})", cwd, got, err)
				}
			}
		} else if desc.Resume || desc.Fork {
			t.Errorf("Resume or Fork without Sessions")
		}
	})

	const prompt = "agenttest prompt: say hello"
	build := func(t plugintest.T, req sdk.CommandRequest) (sdk.Command, bool) {
		t.Helper()
		req.Config, req.Prompt = config, prompt
		if req.Iteration == 0 {
			req.Iteration = 1
		}
		cmd, err := c.BuildCommand(ctx, req)
		if errors.Is(err, sdk.ErrNotSupported) {
			t.Skipf("BuildCommand %s: %v", req.Mode, err)
		}
		if err != nil {
			t.Fatalf("BuildCommand %s: %v", req.Mode, err)
		}
		if (len(cmd.Argv) == 0) == (cmd.Shell == "") {
			t.Fatalf("BuildCommand %s: want exactly one of Argv and Shell, got %q and %q", req.Mode, cmd.Argv, cmd.Shell)
		}
		if len(cmd.Argv) > 0 && cmd.Argv[0] == "" {
			t.Errorf("BuildCommand %s: empty argv[0]", req.Mode)
		}
		return cmd, true
	}
	carries := func(cmd sdk.Command, s string) bool {
		if bytes.Contains(cmd.Stdin, []byte(s)) || strings.Contains(cmd.Shell, s) {
			return true
		}
		for _, a := range cmd.Argv {
			if strings.Contains(a, s) {
				return true
			}
		}
		for _, v := range cmd.Env {
			if strings.Contains(v, s) {
				return true
			}
		}
		return false
	}
	plugintest.Run(t, "BuildCommandPrint", func(t plugintest.T) {
		for _, req := range []sdk.CommandRequest{
			{Mode: sdk.ModePrint},
			{Mode: sdk.ModePrint, Iteration: 2},
			{Mode: sdk.ModePrint, SkipPermissions: true, RunsAsRoot: true},
		} {
			if cmd, _ := build(t, req); !carries(cmd, prompt) {
				t.Errorf("print command %+v does not carry the prompt in stdin, argv, shell or env", cmd)
			}
		}
	})
	plugintest.Run(t, "BuildCommandInteractive", func(t plugintest.T) {
		build(t, sdk.CommandRequest{Mode: sdk.ModeInteractive})
	})
	plugintest.Run(t, "BuildCommandResume", func(t plugintest.T) {
		if !desc.Resume {
			t.Skipf("agent does not resume sessions")
		}
		const id = "0b7e4c1e-agenttest-session"
		if cmd, _ := build(t, sdk.CommandRequest{Mode: sdk.ModePrint, ResumeSessionID: id}); !carries(cmd, id) {
			t.Errorf("resume command %+v does not name the session", cmd)
		}
		if desc.Fork {
			if cmd, _ := build(t, sdk.CommandRequest{Mode: sdk.ModePrint, ResumeSessionID: id, ForkSession: true}); !carries(cmd, id) {
				t.Errorf("fork command %+v does not name the session", cmd)
			}
		}
	})

	// An agent rejects what the host must not get a command for: a mode it
	// does not know (a newer host's), and where it resumes sessions, an id
	// that reads as a flag or a path, and a fork of no session.
	plugintest.Run(t, "BuildCommandRejects", func(t plugintest.T) {
		type bad struct {
			name string
			req  sdk.CommandRequest
		}
		bads := []bad{{"an unknown mode", sdk.CommandRequest{Mode: "agenttest-unknown"}}}
		if desc.Resume {
			for _, id := range []string{"--help", "-a", "../../x.jsonl"} {
				bads = append(bads, bad{"session id " + id, sdk.CommandRequest{Mode: sdk.ModePrint, ResumeSessionID: id}})
			}
		}
		if desc.Fork {
			bads = append(bads, bad{"a fork without a session", sdk.CommandRequest{Mode: sdk.ModePrint, ForkSession: true}})
		}
		for _, b := range bads {
			b.req.Config, b.req.Prompt, b.req.Iteration = config, prompt, 1
			if _, err := c.BuildCommand(ctx, b.req); err == nil {
				t.Errorf("BuildCommand with %s: no error", b.name)
			}
		}
	})
	plugintest.Run(t, "ParseEmpty", func(t plugintest.T) {
		if _, err := parse(c, config, nil); err != nil {
			t.Errorf("ParseStream of no lines: %v", err)
		}
	})
	plugintest.Run(t, "ParseMalformed", func(t plugintest.T) {
		lines := []string{"{", `{"type":`, "[]", "null", "42", `"str"`, `{}`, `{"type":null}`, `{"type":"result","result":5}`,
			`{"type":"assistant"}`, `{"type":"assistant","message":null}`, `{"type":"assistant","message":{"content":"x"}}`,
			`{"type":"item.completed","item":7}`, "\x00\xff\xfe binary", "", "   "}
		if _, err := parse(c, config, lines); err != nil {
			t.Errorf("ParseStream of malformed lines: %v (a malformed line must never fail the parser)", err)
		}
	})
	plugintest.Run(t, "ParsePlainText", func(t plugintest.T) {
		const line = "plain text from agenttest, not JSON"
		events, err := parse(c, config, []string{line})
		if err != nil {
			t.Fatalf("ParseStream: %v", err)
		}
		if !slices.ContainsFunc(events, func(e sdk.Event) bool { return e.Type == sdk.EventText && strings.Contains(e.Text, line) }) {
			t.Errorf("non-JSON line did not become a text event: %v", events)
		}
	})
	plugintest.Run(t, "ParseHugeLine", func(t plugintest.T) {
		huge := strings.Repeat("x", 3*sdk.MaxLineBytes)
		lines := []string{huge, `{"type":"text","text":"` + huge + `"}`, "after"}
		events, err := parse(c, config, lines)
		if err != nil {
			t.Fatalf("ParseStream with a %d-byte line: %v", len(huge), err)
		}
		if !slices.ContainsFunc(events, func(e sdk.Event) bool { return strings.Contains(e.Text, "after") }) {
			t.Errorf("the line after a huge line was lost: %d events", len(events))
		}
	})
	plugintest.Run(t, "RewriteSession", func(t plugintest.T) {
		if desc.Sessions != nil {
			t.Skipf("agent has sessions; test RewriteSession with fixtures")
		}
		data := []byte(`{"cwd":"/from/path"}` + "\n")
		got, err := c.RewriteSession(ctx, sdk.RewriteSessionRequest{Config: config, Data: data, FromCwd: "/from/path", ToCwd: "/to"})
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("RewriteSession without sessions: %q, %v; want data unchanged", got, err)
		}
	})
}
