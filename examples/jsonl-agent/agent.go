package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// The jsonl CLI's stream, one object per line:
//
//	{"type":"session","id":"s-1"}
//	{"type":"text","text":"..."}
//	{"type":"tool","name":"bash","input":{"command":"git commit"}}
//	{"type":"result","text":"...","usage":{"input_tokens":1,"output_tokens":2}}
//	{"type":"error","message":"..."}
type line struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Message string          `json:"message"`
	Usage   *sdk.Usage      `json:"usage"`
}

type provider struct{ agentkit.Base }

// New returns the jsonl agent provider.
func New() sdk.AgentProvider {
	return provider{agentkit.Base{
		Name:            "jsonl",
		Version:         "0.1.0",
		Description:     "example: a JSON-lines coding agent CLI",
		Model:           "Model passed as --model.",
		EnvExample:      "JSONL_API_KEY",
		CaptureSessions: "Copy each iteration's session file to ~/.jsonl/sessions on the host, where `jsonl --resume` finds it.",
		NewParser:       func(sdk.Config) sdk.Parser { return &parser{} },
	}}
}

func (provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	return agentkit.CheckCommon(cfg), nil
}

// SessionPattern is where jsonl keeps a session, in the sandbox's home;
// sanddune captures it after each iteration and puts it back for a run
// that resumes it.
const SessionPattern = "{home}/.jsonl/sessions/{session_id}.jsonl"

// Describe: jsonl needs no credential (a real CLI would list its keys in
// RequiredEnv), resumes a session by id, and asks the host to capture its
// sessions unless capture_sessions = false.
func (p provider) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	c := p.Common(cfg)
	return sdk.AgentDescription{
		Env:             c.Env,
		Sessions:        &sdk.SessionStorage{PathPattern: SessionPattern},
		CaptureSessions: c.CaptureSessions, // capture_sessions, default true
		Resume:          true,
	}, nil
}

// BuildCommand: `jsonl --json [--model M] [--resume ID]`, the prompt on
// stdin, in print mode; the bare CLI for an interactive session.
func (p provider) BuildCommand(_ context.Context, req sdk.CommandRequest) (sdk.Command, error) {
	c := p.Common(req.Config)
	argv := []string{c.Binary}
	switch req.Mode {
	case sdk.ModePrint:
		argv = append(argv, "--json")
	case sdk.ModeInteractive:
	default:
		return sdk.Command{}, fmt.Errorf("jsonl: unknown mode %q", req.Mode)
	}
	if c.Model != "" {
		argv = append(argv, "--model", c.Model)
	}
	session, err := agentkit.ResumeSession(req)
	if err != nil {
		return sdk.Command{}, fmt.Errorf("jsonl: %w", err)
	}
	if session != "" {
		argv = append(argv, "--resume", session)
	}
	return sdk.Command{Argv: argv, Stdin: []byte(req.Prompt)}, nil
}

// parser turns one iteration's lines into events; a line that is not a
// JSON object is text.
type parser struct {
	session agentkit.SessionOnce
}

func (p *parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	switch l.Type {
	case "session":
		return p.session.Event(l.ID)
	case "text":
		return []sdk.Event{{Type: sdk.EventText, Text: l.Text}}
	case "tool":
		return []sdk.Event{{Type: sdk.EventToolCall, ToolName: l.Name, ToolArg: agentkit.ToolArg(l.Name, l.Input)}}
	case "result":
		events := []sdk.Event{{Type: sdk.EventResult, Text: l.Text}}
		if l.Usage != nil {
			events = append(events, sdk.Event{Type: sdk.EventUsage, Usage: l.Usage})
		}
		return events
	case "error":
		return []sdk.Event{{Type: sdk.EventError, Text: l.Message}}
	}
	return nil
}

func (p *parser) Close() []sdk.Event { return nil }
