package docker

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// seesCancel closes seen once the context of a Create is cancelled.
type seesCancel struct {
	*Provider
	seen chan struct{}
}

func (p seesCancel) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	go func() {
		<-ctx.Done()
		close(p.seen)
	}()
	return p.Provider.Create(ctx, req)
}

// TestCancelDuringCreateLeavesNoContainer: the caller (sanddune on Ctrl-C)
// cancels Create after the daemon made the container but before its
// answer arrived. Create returns the cancellation, and no container with
// the run's label is left.
func TestCancelDuringCreateLeavesNoContainer(t *testing.T) {
	cli := requireDocker(t)
	created, release := make(chan struct{}), make(chan struct{})
	t.Setenv("DOCKER_HOST", containerkittest.HoldCreates(t, created, release))
	run := containerkittest.RunID()
	byRun := container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", sdk.LabelRun+"="+run))}
	t.Cleanup(func() {
		cs, _ := cli.ContainerList(context.Background(), byRun)
		for _, c := range cs {
			_ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
	})

	seen := make(chan struct{})
	p := plugintest.Sandbox(t, seesCancel{New().(*Provider), seen})
	wt := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		sb, err := p.Create(ctx, sdk.CreateRequest{
			Config: cfgOf(nil), RunID: run, RunName: t.Name(), HostRepoPath: wt, WorktreePath: wt,
			Labels:  map[string]string{sdk.LabelRun: run, sdk.LabelSandbox: "sandbox.docker.test"},
			HostUID: os.Getuid(), HostGID: os.Getgid(),
		})
		if sb != nil {
			_ = sb.Close(context.Background())
		}
		errc <- err
	}()
	select {
	case <-created:
	case err := <-errc:
		t.Fatalf("Create returned before the daemon created the container: %v", err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Create = %v, want the cancellation", err)
	}
	<-seen // the plugin's Create saw the cancellation too
	close(release)

	// The plugin goes on after the host's call returned: give it time.
	var left []container.Summary
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if left, err = cli.ContainerList(context.Background(), byRun); err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("containers of the cancelled run left: %v", left)
}
