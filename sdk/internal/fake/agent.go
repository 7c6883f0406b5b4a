package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// AgentProvider runs a configured command with the prompt on stdin. Its
// output lines are JSON objects {"type", "text", "tool", "arg", "session"}
// or plain text.
type AgentProvider struct{}

func (AgentProvider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{Version: "0.0.1", Description: "test agent"}, nil
}

func (AgentProvider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "command", Type: cty.List(cty.String), Default: cty.ListVal([]cty.Value{cty.StringVal("cat")})},
	}}, nil
}

type agentConfig struct {
	Command []string `cty:"command"`
}

func (AgentProvider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	var c agentConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if len(c.Command) == 0 {
		return sdk.Diagnostics{{Severity: sdk.SeverityError, Summary: "empty command", Attribute: "command"}}, nil
	}
	return nil, nil
}

func (AgentProvider) Describe(context.Context, sdk.Config) (sdk.AgentDescription, error) {
	return sdk.AgentDescription{}, nil
}

func (AgentProvider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	var c agentConfig
	if err := req.Config.Decode(&c); err != nil {
		return sdk.Command{}, err
	}
	if len(c.Command) == 0 {
		return sdk.Command{}, errors.New("empty command")
	}
	if req.Mode != sdk.ModePrint && req.Mode != sdk.ModeInteractive {
		return sdk.Command{}, fmt.Errorf("unknown mode %q", req.Mode)
	}
	return sdk.Command{Argv: c.Command, Stdin: []byte(req.Prompt)}, nil
}

func (AgentProvider) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	return sdk.ParseLines(ctx, lines, emit, parser{})
}

func (AgentProvider) RewriteSession(_ context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	return req.Data, nil
}

type parser struct{}

func (parser) Parse(line []byte) []sdk.Event {
	var m struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Tool    string `json:"tool"`
		Arg     string `json:"arg"`
		Session string `json:"session"`
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if json.Unmarshal(line, &m) != nil || m.Type == "" {
		return []sdk.Event{{Type: sdk.EventText, Text: string(line)}}
	}
	return []sdk.Event{{Type: sdk.EventType(m.Type), Text: m.Text, ToolName: m.Tool, ToolArg: m.Arg, SessionID: m.Session}}
}

func (parser) Close() []sdk.Event { return nil }
