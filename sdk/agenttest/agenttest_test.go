package agenttest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
	"github.com/missingstudio/sanddune/sdk/internal/fake"
)

func TestFakeAgentRun(t *testing.T) {
	t.Parallel()
	agenttest.Run(t, fake.AgentProvider{}, cty.NilVal)
}

// laxAgent runs any mode as print mode.
type laxAgent struct{ fake.AgentProvider }

func (a laxAgent) BuildCommand(ctx context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	req.Mode = sdk.ModePrint
	return a.AgentProvider.BuildCommand(ctx, req)
}

// recorder is a plugintest.T that keeps the kit's errors instead of failing.
type recorder struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Skipf(string, ...any)              { runtime.Goexit() }

func (r *recorder) Run(_ string, f func(*recorder)) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return true
}

// TestRunFailsAnAgentAcceptingAnUnknownMode: the kit reports an agent that
// builds a command for a mode it does not know, and only that.
func TestRunFailsAnAgentAcceptingAnUnknownMode(t *testing.T) {
	t.Parallel()
	r := &recorder{T: t}
	agenttest.Run(r, laxAgent{}, cty.NilVal)
	if want := []string{"BuildCommand with an unknown mode: no error"}; !slices.Equal(r.errs, want) {
		t.Errorf("errors %q, want %q", r.errs, want)
	}
}

func TestFakeAgentReplay(t *testing.T) {
	t.Parallel()
	fixture := filepath.Join(t.TempDir(), "stream.jsonl")
	content := `{"type":"session_id","session":"s1"}` + "\n" +
		`{"type":"tool_call","tool":"Bash","arg":"ls"}` + "\n" +
		"plain\n" +
		`{"type":"result","text":"done"}` + "\n"
	if err := os.WriteFile(fixture, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := cty.ObjectVal(map[string]cty.Value{"command": cty.ListVal([]cty.Value{cty.StringVal("agent")})})
	agenttest.Replay(t, fake.AgentProvider{}, cfg,
		agenttest.Case{
			Name:  "fixture",
			Lines: agenttest.ReadLines(t, fixture),
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s1"},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "ls"},
				{Type: sdk.EventText, Text: "plain"},
				{Type: sdk.EventResult, Text: "done"},
			},
		},
		agenttest.Case{Name: "empty"},
	)
}

func TestReadLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for content, want := range map[string][]string{
		"":         nil,
		"a\nb\n":   {"a", "b"},
		"a\n\nb":   {"a", "", "b"},
		"only\n":   {"only"},
		"\n":       {},
		"x\ny\n\n": {"x", "y", ""},
	} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := agenttest.ReadLines(t, p); !slices.Equal(got, want) {
			t.Errorf("ReadLines(%q) = %q, want %q", content, got, want)
		}
	}
}

func TestFakeParse(t *testing.T) {
	t.Parallel()
	events := agenttest.Parse(t, fake.AgentProvider{}, cty.NilVal, []string{"a", `{"type":"error","text":"e"}`})
	want := []sdk.Event{{Type: sdk.EventText, Text: "a"}, {Type: sdk.EventError, Text: "e"}}
	if !slices.Equal(events, want) {
		t.Errorf("Parse = %v, want %v", events, want)
	}
}
