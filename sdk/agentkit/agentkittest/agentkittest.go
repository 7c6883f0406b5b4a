// Package agentkittest holds test helpers for agent provider plugins:
// configs decoded the way the host decodes them, golden files, a golden
// matrix of built commands, session rewrites checked both ways and a
// parser fuzzer. It complements sdk/agenttest, which checks parsing
// through a real gRPC connection.
//
//	func TestBuildCommandGolden(t *testing.T) {
//		agentkittest.CheckCommands(t, myagent.New(), "testdata/commands.golden", []agentkittest.CommandCase{
//			{Name: "print", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
//		})
//	}
//
// Importing the package registers the -update flag: `go test -update`
// rewrites the golden files instead of comparing them.
package agentkittest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
	"github.com/missingstudio/sanddune/sdk/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Config returns attrs as the host decodes an agent block for p: every
// schema attribute is present, with its value in attrs, its default or
// null. It fails the test when attrs names an attribute p does not have.
func Config(t testing.TB, p sdk.AgentProvider, attrs map[string]cty.Value) sdk.Config {
	t.Helper()
	s, err := p.ConfigSchema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k := range attrs {
		if !hasAttribute(s, k) {
			t.Fatalf("attribute %q is not in the schema", k)
		}
	}
	return testkit.Config(cty.ObjectVal(attrs), s)
}

func hasAttribute(s sdk.Schema, name string) bool {
	for _, a := range s.Attributes {
		if a.Name == name {
			return true
		}
	}
	return false
}

// CheckGolden compares got with the file at path; with -update it writes
// got to path instead.
func CheckGolden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale (go test -update rewrites it); got:\n%s", path, got)
	}
}

// defaultPrompt is the prompt of a CommandCase that sets none: two lines, the
// second with a completion signal.
const defaultPrompt = "Fix the failing test in src/sum.test.ts.\nWhen done, output <promise>COMPLETE</promise>."

// CommandCase is one BuildCommand call of a golden command matrix.
type CommandCase struct {
	Name string
	// Attrs is the agent block (see Config).
	Attrs map[string]cty.Value
	// Req is the request; its Config comes from Attrs. Its Prompt defaults
	// to a two-line prompt; "-" means no prompt.
	Req sdk.CommandRequest
}

// goldenCommand is one built command, a line of a golden command file.
// scripts/agents-compat.sh replays these lines against the real CLIs.
type goldenCommand struct {
	Name  string            `json:"name"`
	Mode  sdk.Mode          `json:"mode"`
	Argv  []string          `json:"argv"`
	Stdin string            `json:"stdin"`
	Env   map[string]string `json:"env,omitempty"`
	// Prompt is set when the prompt is the last argv entry (interactive).
	Prompt string `json:"prompt,omitempty"`
	// ResumeSessionID is the session the command resumes or forks, if any.
	ResumeSessionID string `json:"resume_session_id,omitempty"`
	Fork            bool   `json:"fork,omitempty"`
}

// buildCommands builds every case's command with p. Each must be argv
// only.
func buildCommands(t testing.TB, p sdk.AgentProvider, cases []CommandCase) []goldenCommand {
	t.Helper()
	var got []goldenCommand
	for _, c := range cases {
		req := c.Req
		req.Config = Config(t, p, c.Attrs)
		switch req.Prompt {
		case "":
			req.Prompt = defaultPrompt
		case "-":
			req.Prompt = ""
		}
		cmd, err := p.BuildCommand(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if cmd.Shell != "" || len(cmd.Argv) == 0 {
			t.Fatalf("%s: want argv only, got %+v", c.Name, cmd)
		}
		g := goldenCommand{Name: c.Name, Mode: req.Mode, Argv: cmd.Argv, Stdin: string(cmd.Stdin), Env: cmd.Env}
		if req.Mode == sdk.ModeInteractive && req.Prompt != "" {
			g.Prompt = req.Prompt
		}
		if req.Iteration <= 1 {
			g.ResumeSessionID = req.ResumeSessionID
			g.Fork = req.ForkSession && req.ResumeSessionID != ""
		}
		got = append(got, g)
	}
	return got
}

// CheckCommands builds the cases with p and compares the commands, one
// JSON object a line, with the golden file at path (see CheckGolden).
func CheckCommands(t testing.TB, p sdk.AgentProvider, path string, cases []CommandCase) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, g := range buildCommands(t, p, cases) {
		if err := enc.Encode(g); err != nil {
			t.Fatal(err)
		}
	}
	CheckGolden(t, path, b.Bytes())
}

// Rewrite rewrites a session file from one cwd to another, checks that
// rewriting it back gives data again, and returns the rewritten file.
func Rewrite(t testing.TB, p sdk.AgentProvider, data []byte, from, to string) []byte {
	t.Helper()
	got := rewrite(t, p, data, from, to)
	if back := rewrite(t, p, got, to, from); !bytes.Equal(back, data) {
		t.Error("rewriting back does not give the original session")
	}
	return got
}

func rewrite(t testing.TB, p sdk.AgentProvider, data []byte, from, to string) []byte {
	t.Helper()
	out, err := p.RewriteSession(context.Background(), sdk.RewriteSessionRequest{Data: data, FromCwd: from, ToCwd: to})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzParser fuzzes an agent's stream parser (newParser returns a fresh
// one) with whole streams, one line per '\n', seeded with the fixture
// files' streams and each of their lines. Any stream parses without a
// crash, to the same events every time, and a line that is not JSON
// becomes at least one event, as sdk.Parser requires.
func FuzzParser(f *testing.F, newParser func() sdk.Parser, fixtures ...string) {
	for _, s := range []string{"", "{}", "null", "[]", `{"type":1}`, `{"type":"result"}`, "not json", "{", `"x"`, "\xff\x00\r"} {
		f.Add([]byte(s))
	}
	for _, path := range fixtures {
		lines := agenttest.ReadLines(f, path)
		f.Add([]byte(strings.Join(lines, "\n")))
		for _, l := range lines {
			f.Add([]byte(l))
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		lines := bytes.Split(stream, []byte{'\n'})
		first := parseAll(t, newParser(), lines)
		if again := parseAll(t, newParser(), lines); !reflect.DeepEqual(first, again) {
			t.Fatalf("the same stream parsed to different events:\n%s", testkit.DiffEvents(again, first))
		}
	})
}

func parseAll(t *testing.T, p sdk.Parser, lines [][]byte) []sdk.Event {
	var events []sdk.Event
	for _, l := range lines {
		got := p.Parse(bytes.Clone(l))
		if len(got) == 0 && len(bytes.TrimSpace(l)) > 0 && !json.Valid(l) {
			t.Fatalf("line %q is not JSON and became no event", l)
		}
		events = append(events, got...)
	}
	return append(events, p.Close()...)
}
