package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

// A sandbox provider's progress report, a run entering a phase and an
// egress refusal are --events lines of their own types beside the agent
// events, in the order the runs report them.
func TestEventsCarrySandboxProgressPhasesAndEgressDenials(t *testing.T) {
	var b bytes.Buffer
	var o core.RunOptions
	setEventSinks(&o, NewEventWriter(&b), "events.jsonl")
	onEvent, onProgress, onPhase := o.OnEvent, o.OnSandboxProgress, o.OnPhase
	at := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	onProgress(core.SandboxProgress{Run: "implement-3", Time: at,
		Progress: sdk.Progress{Waiting: true, Message: "queued behind 5 running pods (max_concurrent 5)"}})
	onProgress(core.SandboxProgress{Run: "implement-3", Time: at, Progress: sdk.Progress{Message: "left the queue after 12s"}})
	onEvent(core.AgentEvent{Run: "implement-3", Iteration: 1, Time: at, Event: sdk.Event{Type: sdk.EventText, Text: "hi"}})
	onPhase(core.PhaseEvent{Run: "implement-3", Iteration: 2, MaxIterations: 5, Time: at, Phase: core.PhaseAgent})
	onPhase(core.PhaseEvent{Run: "implement-3", Iteration: 2, MaxIterations: 5, Time: at, Phase: core.PhaseDone, Commits: 0})
	o.OnEgressDenied(core.EgressDenied{Run: "implement-3", Time: at, EgressDenial: sdk.EgressDenial{Host: "example.com", Port: 443, Proto: "tcp", Reason: "not in egress.allow"}})

	type line struct {
		Type      string
		Run       string
		Iteration int
		Timestamp time.Time
		Payload   map[string]any
	}
	var got []line
	dec := json.NewDecoder(&b)
	for dec.More() {
		var l line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 6 {
		t.Fatalf("%d lines, want 6: %+v", len(got), got)
	}
	q, left := got[0], got[1]
	if q.Type != "sandbox_progress" || q.Run != "implement-3" || q.Iteration != 0 || !q.Timestamp.Equal(at) ||
		q.Payload["waiting"] != true || q.Payload["message"] != "queued behind 5 running pods (max_concurrent 5)" {
		t.Errorf("queued line %+v", q)
	}
	if left.Type != "sandbox_progress" || left.Payload["waiting"] != false || left.Payload["message"] != "left the queue after 12s" {
		t.Errorf("left-the-queue line %+v", left)
	}
	if got[2].Type != "text" || got[2].Payload["text"] != "hi" {
		t.Errorf("agent event line %+v", got[2])
	}
	if p := got[3]; p.Type != "phase" || p.Iteration != 2 || p.Payload["phase"] != "agent" || p.Payload["max_iterations"] != 5.0 || p.Payload["commits"] != nil {
		t.Errorf("phase line %+v", p)
	}
	if p := got[4]; p.Type != "phase" || p.Payload["phase"] != "done" || p.Payload["failed"] != nil || p.Payload["commits"] != 0.0 {
		t.Errorf("done line %+v", p)
	}
	if d := got[5]; d.Type != "egress_denied" || d.Run != "implement-3" || d.Iteration != 0 || d.Payload["host"] != "example.com" ||
		d.Payload["port"] != 443.0 || d.Payload["proto"] != "tcp" || d.Payload["reason"] != "not in egress.allow" {
		t.Errorf("egress denied line %+v", d)
	}
}

// TestEventsNameBlockKeyAndSessionLimit: in --events, a for_each
// instance's waiting and done lines carry its block and key whatever its
// `name` (the live view places it by them), and a session's its steps'
// iterations together.
func TestEventsNameBlockKeyAndSessionLimit(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "done" {
  command = ["sh", "-c", "cat > /dev/null; echo '<promise>COMPLETE</promise>'"]
}
run "fan" {
  for_each        = { api = "x" }
  name            = "review-${each.key}"
  agent           = agent.command.done
  prompt          = "p"
  max_iterations  = 2
  branch_strategy = { type = "branch", branch = "agent/${each.key}" }
}
session "s" {
  branch_strategy = { type = "branch", branch = "agent/s" }
  step "one" {
    agent          = agent.command.done
    prompt         = "p"
    max_iterations = 2
  }
  step "two" {
    agent          = agent.command.done
    prompt         = "p"
    max_iterations = 3
  }
}
`)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	if r := run(t, dir, "run", "--events", events); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	type payload struct {
		Phase         string
		Block, Key    string
		MaxIterations int `json:"max_iterations"`
	}
	seen := map[string]payload{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Type, Run string
			Payload   payload
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == "phase" && (e.Payload.Phase == "waiting" || e.Payload.Phase == "done") {
			seen[e.Run+" "+e.Payload.Phase] = e.Payload
		}
	}
	for _, ph := range []string{"waiting", "done"} {
		if p := seen["review-api "+ph]; p.Block != "fan" || p.Key != "api" || p.MaxIterations != 2 {
			t.Errorf("review-api %s: %+v, want block fan, key api, max_iterations 2", ph, p)
		}
		if p := seen["s "+ph]; p.MaxIterations != 5 || p.Key != "" {
			t.Errorf("session %s: %+v, want max_iterations 5 (2 + 3), no key", ph, p)
		}
	}
}
