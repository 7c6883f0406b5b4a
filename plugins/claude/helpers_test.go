package claude

// Test helpers shared by the agent plugins (each plugin keeps its own copy:
// plugins import nothing but the sdk).

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
	"github.com/zclconf/go-cty/cty"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// testConfig decodes attrs the way the host does: every schema attribute is
// present, with its default or null when not given.
func testConfig(t *testing.T, attrs map[string]cty.Value) sdk.Config {
	t.Helper()
	s, err := New().ConfigSchema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]cty.Value{}
	for _, a := range s.Attributes {
		switch v, ok := attrs[a.Name]; {
		case ok:
			obj[a.Name] = v
		case a.Default != cty.NilVal:
			obj[a.Name] = a.Default
		default:
			obj[a.Name] = cty.NullVal(a.Type)
		}
	}
	for k := range attrs {
		if _, ok := obj[k]; !ok {
			t.Fatalf("attribute %q is not in the schema", k)
		}
	}
	return sdk.Config{Value: cty.ObjectVal(obj)}
}

// goldenCommand is one built command in testdata/commands.golden; the
// compatibility script (scripts/agents-compat.sh) replays them against the
// real CLI.
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

// checkGolden compares got, one JSON object per line, with path.
func checkGolden(t *testing.T, path string, got []goldenCommand) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, g := range got {
		if err := enc.Encode(g); err != nil {
			t.Fatal(err)
		}
	}
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("%s is stale (go test -update rewrites it); got:\n%s", path, b.Bytes())
	}
}

// replay runs the cases through ParseStream over real gRPC.
func replay(t *testing.T, cfg cty.Value, cases []parseCase) {
	t.Helper()
	var kc []agenttest.Case
	for _, c := range cases {
		kc = append(kc, agenttest.Case{Name: c.name, Lines: c.lines, Want: c.want})
	}
	agenttest.Replay(t, New(), cfg, kc...)
}

// cmdCase is one BuildCommand call of a golden test. Prompt defaults to
// testPrompt; "-" means no prompt.
type cmdCase struct {
	name  string
	attrs map[string]cty.Value
	req   sdk.CommandRequest
}

const testPrompt = "Fix the failing test in src/sum.test.ts.\nWhen done, output <promise>COMPLETE</promise>."

func buildAll(t *testing.T, cases []cmdCase) []goldenCommand {
	t.Helper()
	var got []goldenCommand
	for _, c := range cases {
		req := c.req
		req.Config = testConfig(t, c.attrs)
		switch req.Prompt {
		case "":
			req.Prompt = testPrompt
		case "-":
			req.Prompt = ""
		}
		cmd, err := New().BuildCommand(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cmd.Shell != "" || len(cmd.Argv) == 0 {
			t.Fatalf("%s: want argv only, got %+v", c.name, cmd)
		}
		g := goldenCommand{Name: c.name, Mode: req.Mode, Argv: cmd.Argv, Stdin: string(cmd.Stdin), Env: cmd.Env}
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

type configureCase struct {
	name  string
	attrs map[string]cty.Value
	want  []string // attributes with an error, in order
}

func checkConfigure(t *testing.T, cases []configureCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds, err := New().Configure(context.Background(), testConfig(t, c.attrs))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				if d.Severity == sdk.SeverityError {
					got = append(got, d.Attribute)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("error attributes = %v, want %v (%v)", got, c.want, ds)
			}
		})
	}
}

type parseCase struct {
	name  string
	lines []string
	want  []sdk.Event
}
