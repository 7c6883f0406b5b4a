package enginetest

import (
	"context"
	"strconv"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// fakeAgent is a scripted agent provider: Script gives the shell command
// of each iteration, and every stdout line is read as "<KIND> <payload>":
//
//	TEXT s        a text event (also any line without a known kind)
//	RESULT s      a result event
//	SESSION id    a session_id event
//	USAGE in out  a usage event
//	ERROR s       an error event
//	TOOL name s   a tool call with argument s
type fakeAgent struct {
	// Script returns the shell command for iteration n (1-based).
	Script func(n int) string
	Desc   sdk.AgentDescription
	// OnBuild, when set, sees every command request.
	OnBuild func(sdk.CommandRequest)
}

func (f *fakeAgent) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "fake", Kind: sdk.KindAgent, Version: "0.0.0"}, nil
}

func (f *fakeAgent) ConfigSchema(context.Context) (sdk.Schema, error) { return sdk.Schema{}, nil }

func (f *fakeAgent) Configure(context.Context, sdk.Config) (sdk.Diagnostics, error) { return nil, nil }

func (f *fakeAgent) Describe(context.Context, sdk.Config) (sdk.AgentDescription, error) {
	return f.Desc, nil
}

func (f *fakeAgent) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	if f.OnBuild != nil {
		f.OnBuild(req)
	}
	return sdk.Command{Shell: f.Script(req.Iteration), Stdin: []byte(req.Prompt)}, nil
}

func (f *fakeAgent) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	return sdk.ParseLines(ctx, lines, emit, fakeParser{})
}

func (f *fakeAgent) RewriteSession(_ context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	return req.Data, nil
}

type fakeParser struct{}

func (fakeParser) Parse(line []byte) []sdk.Event {
	kind, rest, _ := strings.Cut(string(line), " ")
	switch kind {
	case "TEXT":
		return []sdk.Event{{Type: sdk.EventText, Text: rest}}
	case "RESULT":
		return []sdk.Event{{Type: sdk.EventResult, Text: rest}}
	case "SESSION":
		return []sdk.Event{{Type: sdk.EventSessionID, SessionID: rest}}
	case "ERROR":
		return []sdk.Event{{Type: sdk.EventError, Text: rest}}
	case "TOOL":
		name, arg, _ := strings.Cut(rest, " ")
		return []sdk.Event{{Type: sdk.EventToolCall, ToolName: name, ToolArg: arg}}
	case "USAGE":
		in, out, _ := strings.Cut(rest, " ")
		i, _ := strconv.ParseInt(in, 10, 64)
		o, _ := strconv.ParseInt(out, 10, 64)
		return []sdk.Event{{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: i, OutputTokens: o}}}
	}
	return []sdk.Event{{Type: sdk.EventText, Text: string(line)}}
}

func (fakeParser) Close() []sdk.Event { return nil }
