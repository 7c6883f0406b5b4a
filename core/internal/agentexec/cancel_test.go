package agentexec

import (
	"context"
	"errors"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// usageAgent is an agent plugin whose parser reports, when closed, the
// usage of the lines it saw: a CLI's usage of a cut stream.
type usageAgent struct{ sdk.AgentProvider }

func (usageAgent) Info(context.Context) (sdk.Info, error) { return sdk.Info{Name: "usage"}, nil }

func (usageAgent) ParseStream(ctx context.Context, _ sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	return sdk.ParseLines(ctx, lines, emit, &usageParser{})
}

type usageParser struct{ lines int64 }

func (p *usageParser) Parse([]byte) []sdk.Event { p.lines++; return nil }
func (p *usageParser) Close() []sdk.Event {
	return []sdk.Event{{Type: sdk.EventUsage, Usage: &sdk.Usage{OutputTokens: p.lines}}}
}

func (usageAgent) BuildCommand(context.Context, sdk.CommandRequest) (sdk.Command, error) {
	return sdk.Command{Argv: []string{"agent"}}, nil
}

// interruptedSandbox prints two lines, then cancels the run (the user's
// Ctrl-C) and waits for its Exec to be cancelled.
type interruptedSandbox struct {
	sdk.Sandbox
	interrupt context.CancelFunc
}

func (s interruptedSandbox) Exec(ctx context.Context, _ sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte("one")})
	out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte("two")})
	s.interrupt()
	<-ctx.Done()
	return sdk.ExecResult{ExitCode: 130}, ctx.Err()
}

// TestInterruptedIterationKeepsUsage: an iteration interrupted by the user
// still reports the usage the agent plugin's parser gives on close, across
// the gRPC transport.
func TestInterruptedIterationKeepsUsage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &Runner{Agent: plugintest.Agent(t, usageAgent{}), Sandbox: interruptedSandbox{interrupt: cancel}}
	out, err := r.Invoke(ctx, 1, "prompt", "", false)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
	if out.Usage == nil || out.Usage.OutputTokens != 2 {
		t.Fatalf("usage = %+v, want the parser's usage of the 2 lines", out.Usage)
	}
}
