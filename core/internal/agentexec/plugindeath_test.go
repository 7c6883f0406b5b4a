package agentexec

import (
	"context"
	"errors"
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

func (s endlessSandbox) Exec(ctx context.Context, _ sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
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
