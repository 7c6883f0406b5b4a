package sdk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/host"
)

// queued is a provider whose Create reports that it waits in a queue, and
// then that it left it, before it returns.
type queued struct {
	stub
	mu      sync.Mutex
	creates int
}

func (q *queued) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	q.mu.Lock()
	q.creates++
	q.mu.Unlock()
	req.Report(sdk.Progress{Waiting: true, Message: "queued behind 1 running sandbox (max_concurrent 1)"})
	req.Report(sdk.Progress{Message: "left the queue"})
	return q.stub.Create(ctx, req)
}

// TestProgressDuringCreateReachesTheHost: the reports a provider makes
// while Create runs cross the gRPC connection in order, all before Create
// returns, and the catalog says the component streams them. A Create
// whose caller takes no reports creates the sandbox all the same.
func TestProgressDuringCreateReachesTheHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := &queued{}
	cp := client(t, sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{"q": q}})
	p, err := host.DispenseSandbox(cp, "q")
	if err != nil {
		t.Fatal(err)
	}

	var got []sdk.Progress
	created := false
	sb, err := p.Create(ctx, sdk.CreateRequest{RunID: "r1", Progress: func(pr sdk.Progress) {
		if created {
			t.Errorf("progress %+v after Create returned", pr)
		}
		got = append(got, pr)
	}})
	created = true
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.Progress{
		{Waiting: true, Message: "queued behind 1 running sandbox (max_concurrent 1)"},
		{Message: "left the queue"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("progress %+v, want %+v", got, want)
	}
	if info := sb.Info(); info.ID != "id" || info.RepoPath != "/repo" {
		t.Errorf("created sandbox %+v", info)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := p.Create(ctx, sdk.CreateRequest{RunID: "r2"}); err != nil {
		t.Fatalf("Create without a progress func: %v", err)
	}
	_, err = p.Create(ctx, sdk.CreateRequest{RunID: "unsupported", Progress: func(sdk.Progress) {}})
	if !errors.Is(err, sdk.ErrNotSupported) || !strings.HasPrefix(err.Error(), "plugin q: Create: ") {
		t.Errorf("a failing Create with progress: %v, want the plugin's not-supported error for Create", err)
	}
	if q.creates != 3 {
		t.Errorf("%d creates, want 3", q.creates)
	}
}
