package agentexec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// dyingAgent is an agent plugin whose parser fails after the first line,
// as ParseStream does when the plugin process is killed mid-iteration.
type dyingAgent struct{ sdk.AgentProvider }

func (dyingAgent) BuildCommand(context.Context, sdk.CommandRequest) (sdk.Command, error) {
	return sdk.Command{Argv: []string{"agent"}}, nil
}

func (dyingAgent) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, _ func(sdk.Event)) error {
	<-lines
	return sdk.ErrPluginShutdown
}

// endlessSandbox runs an agent that prints forever, until its Exec is
// cancelled (or, as a backstop, a minute passes).
type endlessSandbox struct {
	sdk.Sandbox
	cancelled chan bool
}

func (s endlessSandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	if req.Argv[0] == "true" {
		return sdk.ExecResult{}, nil // its plugin is alive
	}
	backstop := time.After(time.Minute)
	for {
		out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(`{"type":"text"}`)})
		select {
		case <-ctx.Done():
			s.cancelled <- true
			return sdk.ExecResult{ExitCode: 137}, ctx.Err()
		case <-backstop:
			s.cancelled <- false
			return sdk.ExecResult{}, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestAgentStoppedWhenItsPluginDies: when the agent plugin dies mid-
// iteration (its parser fails), the host stops the agent's process in the
// sandbox at once instead of letting it run on unwatched, and the
// iteration fails saying the plugin died (not that it failed to parse).
func TestAgentStoppedWhenItsPluginDies(t *testing.T) {
	sb := endlessSandbox{cancelled: make(chan bool, 1)}
	r := &Runner{Agent: dyingAgent{}, Sandbox: sb, IdleTimeout: time.Hour, CompletionTimeout: time.Hour}
	_, err := r.Invoke(context.Background(), 1, "prompt", "", false)
	if !<-sb.cancelled {
		t.Fatal("the agent ran on after its plugin died")
	}
	if !errors.Is(err, sdk.ErrPluginShutdown) || !strings.Contains(err.Error(), "the agent plugin died") ||
		!strings.Contains(err.Error(), "agent was stopped") || strings.Contains(err.Error(), "parse") {
		t.Fatalf("err = %v, want that the agent plugin died (not a parse failure) and the agent was stopped", err)
	}
}

// sharedProcessSandbox is a sandbox served by the agent plugin's process:
// once the agent plugin is dead, so is it.
type sharedProcessSandbox struct{ endlessSandbox }

func (s sharedProcessSandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	if req.Argv[0] == "true" {
		return sdk.ExecResult{}, fmt.Errorf("sb: Exec: %w", sdk.ErrPluginShutdown)
	}
	return s.endlessSandbox.Exec(ctx, req, out)
}

// TestSandboxBlamedWhenOneProcessServedBoth: when the agent plugin's
// process dies and the sandbox plugin is gone with it (one process served
// both), the iteration fails as the sandbox's failure, which the run
// cleans up after (its plugin restarted), not as the agent's.
func TestSandboxBlamedWhenOneProcessServedBoth(t *testing.T) {
	sb := sharedProcessSandbox{endlessSandbox{cancelled: make(chan bool, 1)}}
	r := &Runner{Agent: dyingAgent{}, Sandbox: sb, IdleTimeout: time.Hour, CompletionTimeout: time.Hour}
	_, err := r.Invoke(context.Background(), 1, "prompt", "", false)
	var sbErr *SandboxExecError
	if !errors.As(err, &sbErr) || !errors.Is(err, sdk.ErrPluginShutdown) || !strings.Contains(err.Error(), "the sandbox plugin crashed") {
		t.Fatalf("err = %v, want the sandbox plugin's crash", err)
	}
}
