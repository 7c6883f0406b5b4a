package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

func TestConformance(t *testing.T) {
	agenttest.Run(t, New(), cty.NilVal)
}

// TestBuildCommandGolden: the command lines for print mode, a model, a
// resumed session and an interactive session (go test -update rewrites
// testdata/commands.golden).
func TestBuildCommandGolden(t *testing.T) {
	p := New()
	agentkittest.CheckCommands(t, p, "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Prompt: "fix it", Iteration: 1}},
		{Name: "model", Attrs: map[string]cty.Value{"model": cty.StringVal("big-1")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Prompt: "fix it", Iteration: 1}},
		{Name: "resume", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Prompt: "go on", Iteration: 1, ResumeSessionID: "s-1"}},
		{Name: "resume only the first iteration", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Prompt: "go on", Iteration: 2, ResumeSessionID: "s-1"}},
		{Name: "interactive", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "hi", Iteration: 1}},
	})
}

// fakeRun runs the fake CLI with args and prompt in a fresh git repo, with
// home as HOME, and returns its stdout lines.
func fakeRun(t *testing.T, home, prompt string, args ...string) []string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	fake, _ := filepath.Abs("testdata/fake-jsonl")
	cmd := exec.Command(fake, args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(prompt)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fake-jsonl: %v\n%s", err, stderr.String())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// TestParseFakeCLIGolden: the fake CLI's stream, new and resumed, parsed
// through a real gRPC connection: the session id, text (a raw line too),
// the tool call, the result carrying the completion signal, and usage.
func TestParseFakeCLIGolden(t *testing.T) {
	var b bytes.Buffer
	home := t.TempDir()
	for _, args := range [][]string{{"--json"}, {"--json", "--model", "big-1", "--resume", "s-1"}} {
		events := agenttest.Parse(t, New(), cty.NilVal, fakeRun(t, home, "save this", args...))
		fmt.Fprintf(&b, "# fake-jsonl %s\n", strings.Join(args, " "))
		for _, e := range events {
			line, _ := json.Marshal(e)
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	agentkittest.CheckGolden(t, "testdata/events.golden", b.Bytes())
}

func TestMalformedLinesAreText(t *testing.T) {
	got := agenttest.Parse(t, New(), cty.NilVal, []string{`{"type":`, `[1,2]`, `{"type":"unknown"}`})
	want := []sdk.Event{{Type: sdk.EventText, Text: `{"type":`}, {Type: sdk.EventText, Text: `[1,2]`}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events %+v, want %+v", got, want)
	}
}
