package sdk

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
)

// slowProvider's Create waits for release, whatever its context, and
// returns sb: a provider whose engine finishes a create that its caller
// gave up on.
type slowProvider struct {
	SandboxProvider
	entered, release chan struct{}
	sb               *closeSandbox
}

func (p *slowProvider) Create(context.Context, CreateRequest) (Sandbox, error) {
	close(p.entered)
	<-p.release
	return p.sb, nil
}

// closeSandbox reports its Close.
type closeSandbox struct {
	Sandbox
	closed chan struct{}
}

func (s *closeSandbox) Info() SandboxInfo           { return SandboxInfo{ID: "c1"} }
func (s *closeSandbox) Close(context.Context) error { close(s.closed); return nil }

func slowServer() (sandboxServer, *slowProvider) {
	p := &slowProvider{entered: make(chan struct{}), release: make(chan struct{}), sb: &closeSandbox{closed: make(chan struct{})}}
	return sandboxServer{server: newServer(ServeOpts{Sandboxes: map[string]SandboxProvider{"s": p}})}, p
}

// TestCreateFinishedAfterCancelIsClosed: a sandbox whose Create ends after
// the host cancelled the call is closed, not kept under a handle nobody
// has (a Ctrl-C during Create left the docker container behind).
func TestCreateFinishedAfterCancelIsClosed(t *testing.T) {
	t.Parallel()
	s, p := slowServer()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Create(ctx, &pluginpb.CreateRequest{Component: "s"})
		errc <- err
	}()
	<-p.entered
	cancel()
	close(p.release)
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Errorf("Create = %v, want Canceled", err)
	}
	select {
	case <-p.sb.closed:
	default:
		t.Error("the sandbox created after the cancellation is not closed")
	}
}

// TestShutdownWaitsForCreate: when the plugin stops (closeAll) while a
// Create is in progress, the sandbox it returns is closed too.
func TestShutdownWaitsForCreate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, p := slowServer()
		go s.Create(context.Background(), &pluginpb.CreateRequest{Component: "s"})
		<-p.entered
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done <- s.closeAll(ctx)
		}()
		// Every goroutine blocks: closeAll waits for the Create (or, not
		// waiting, has already returned and so misses the sandbox).
		synctest.Wait()
		close(p.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.sb.closed:
		default:
			t.Error("the sandbox whose Create was in progress at shutdown is not closed")
		}
	})
}
