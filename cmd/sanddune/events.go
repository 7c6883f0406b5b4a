package main

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

// EventWriter writes agent events, the sandbox provider's progress
// reports, phases and egress refusals as JSON lines (`--events FILE`), one
// object per event: {"type", "run", "iteration", "timestamp", "payload"}.
// It is safe for the concurrent runs of a process; use Write as
// core.RunOptions.OnEvent, WriteSandboxProgress as its OnSandboxProgress,
// WritePhase as its OnPhase and WriteEgressDenied as its OnEgressDenied.
type EventWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewEventWriter writes events to w.
func NewEventWriter(w io.Writer) *EventWriter {
	return &EventWriter{enc: json.NewEncoder(w)}
}

// Write writes one event. After a write error it drops events; Err
// reports the error.
func (w *EventWriter) Write(e core.AgentEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.err = w.enc.Encode(eventJSON(e))
}

// sandboxProgressType is the type of a sandbox progress report's line.
const sandboxProgressType = "sandbox_progress"

// WriteSandboxProgress writes one progress report of a sandbox provider
// (iteration 0: no iteration has started), like Write.
func (w *EventWriter) WriteSandboxProgress(p core.SandboxProgress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.err = w.enc.Encode(eventLine{Type: sandboxProgressType, Run: p.Run, Timestamp: p.Time.UTC(), Payload: struct {
		Waiting bool   `json:"waiting"`
		Message string `json:"message"`
	}{p.Waiting, p.Message}})
}

// phaseType is the type of a phase line.
const phaseType = "phase"

// WritePhase writes a run entering a phase (iteration: the agent's, 0
// outside the loop), like Write.
func (w *EventWriter) WritePhase(e core.PhaseEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	p := struct {
		Phase         core.Phase `json:"phase"`
		Block         string     `json:"block,omitempty"`
		Key           string     `json:"key,omitempty"`
		MaxIterations int        `json:"max_iterations"`
		Branch        string     `json:"branch,omitempty"`
		Failed        bool       `json:"failed,omitempty"`
		Cancelled     bool       `json:"cancelled,omitempty"`
		Commits       *int       `json:"commits,omitempty"`
	}{Phase: e.Phase, Block: e.Block, Key: e.Key, MaxIterations: e.MaxIterations, Branch: e.Branch, Failed: e.Failed, Cancelled: e.Cancelled}
	if e.Phase == core.PhaseDone {
		p.Commits = &e.Commits
	}
	w.err = w.enc.Encode(eventLine{Type: phaseType, Run: e.Run, Iteration: e.Iteration, Timestamp: e.Time.UTC(), Payload: p})
}

// egressDeniedType is the type of an egress refusal's line.
const egressDeniedType = "egress_denied"

// WriteEgressDenied writes one refusal of a sandbox's egress policy
// (iteration 0), like Write.
func (w *EventWriter) WriteEgressDenied(d core.EgressDenied) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	w.err = w.enc.Encode(eventLine{Type: egressDeniedType, Run: d.Run, Timestamp: d.Time.UTC(), Payload: struct {
		Host   string `json:"host"`
		Port   int    `json:"port"`
		Proto  string `json:"proto"`
		Reason string `json:"reason"`
	}{d.Host, d.Port, d.Proto, d.Reason}})
}

// Err is the first write error.
func (w *EventWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

type eventLine struct {
	Type      string    `json:"type"`
	Run       string    `json:"run"`
	Iteration int       `json:"iteration"`
	Timestamp time.Time `json:"timestamp"`
	Payload   any       `json:"payload"`
}

func eventJSON(e core.AgentEvent) eventLine {
	ev := e.Event
	var payload any
	switch ev.Type {
	case sdk.EventToolCall:
		payload = struct {
			Name string `json:"name"`
			Arg  string `json:"arg"`
		}{ev.ToolName, ev.ToolArg}
	case sdk.EventSessionID:
		payload = struct {
			SessionID string `json:"session_id"`
		}{ev.SessionID}
	case sdk.EventUsage:
		payload = ev.Usage
	default:
		payload = struct {
			Text string `json:"text"`
		}{ev.Text}
	}
	return eventLine{Type: string(ev.Type), Run: e.Run, Iteration: e.Iteration, Timestamp: e.Time.UTC(), Payload: payload}
}
