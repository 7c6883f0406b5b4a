package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/zclconf/go-cty/cty"
)

// fakeProvider lists fixed resources and records removals; it cannot
// recover sandboxes.
type fakeProvider struct {
	sdk.SandboxProvider // unused methods panic
	caps                *sdk.SandboxCapabilities
	resources           []sdk.Resource
	listErr             error
	removed             []string
	// configs are the configs the resource calls got, as "list:<endpoint>"
	// and "remove:<endpoint>" ("defaults" for the zero Config).
	configs []string
}

func endpoint(cfg sdk.Config) string {
	if cfg.IsNull() {
		return "defaults"
	}
	return cfg.Value.GetAttr("endpoint").AsString()
}

func (f *fakeProvider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "fake", Kind: sdk.KindSandbox, Sandbox: f.caps}, nil
}

func (f *fakeProvider) ListResources(_ context.Context, cfg sdk.Config) ([]sdk.Resource, error) {
	f.configs = append(f.configs, "list:"+endpoint(cfg))
	return f.resources, f.listErr
}

func (f *fakeProvider) RemoveResource(_ context.Context, cfg sdk.Config, id string) error {
	f.configs = append(f.configs, "remove:"+endpoint(cfg))
	f.removed = append(f.removed, id)
	return nil
}

func labels(t *testing.T, pid int) map[string]string {
	t.Helper()
	host, _ := os.Hostname()
	return map[string]string{sdk.LabelRun: "r", sdk.LabelPID: strconv.Itoa(pid), sdk.LabelHost: host}
}

func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestOrphaned(t *testing.T) {
	t.Parallel()
	dead := deadPID(t)
	for name, tc := range map[string]struct {
		labels map[string]string
		want   bool
	}{
		"dead pid":     {labels(t, dead), true},
		"live pid":     {labels(t, os.Getpid()), false},
		"other host":   {map[string]string{sdk.LabelPID: strconv.Itoa(dead), sdk.LabelHost: "elsewhere"}, false},
		"no pid label": {map[string]string{sdk.LabelHost: labels(t, dead)[sdk.LabelHost]}, false},
	} {
		if got := Orphaned(tc.labels); got != tc.want {
			t.Errorf("%s: Orphaned = %v", name, got)
		}
	}
}

func TestFakeBindMountOrphansAreRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := &fakeProvider{caps: &sdk.SandboxCapabilities{Contract: sdk.ContractBindMount}, resources: []sdk.Resource{
		{ID: "dead", Labels: labels(t, deadPID(t))}, {ID: "live", Labels: labels(t, os.Getpid())},
	}}
	sbs, err := Sandboxes(ctx, "fake", p, sdk.Config{}, Options{DryRun: true})
	if err != nil || len(sbs) != 1 || sbs[0].Action != WouldRemove || sbs[0].Isolated || len(p.removed) != 0 {
		t.Fatalf("dry run: %+v, %v, removed %v", sbs, err, p.removed)
	}
	sbs, err = Sandboxes(ctx, "fake", p, sdk.Config{}, Options{})
	if err != nil || len(sbs) != 1 || sbs[0].Action != Removed || !slices.Equal(p.removed, []string{"dead"}) {
		t.Fatalf("gc: %+v, %v, removed %v", sbs, err, p.removed)
	}
}

// A provider that does not say its contract may hold work: it is treated
// as isolated, and kept since it cannot recover its sandboxes.
func TestFakeUnknownContractIsKept(t *testing.T) {
	t.Parallel()
	p := &fakeProvider{resources: []sdk.Resource{{ID: "dead", Labels: labels(t, deadPID(t))}}}
	sbs, err := Sandboxes(context.Background(), "fake", p, sdk.Config{}, Options{})
	if err != nil || len(sbs) != 1 || !sbs[0].Isolated || sbs[0].Action != Kept || len(p.removed) != 0 ||
		!strings.Contains(sbs[0].Reason, "--force") {
		t.Fatalf("gc: %+v, %v, removed %v", sbs, err, p.removed)
	}
}

func TestFakeListingErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := &fakeProvider{listErr: errors.New("daemon down")}
	if _, err := Sandboxes(ctx, "fake", p, sdk.Config{}, Options{}); err == nil || !strings.Contains(err.Error(), "daemon down") {
		t.Errorf("listing error: %v", err)
	}
	p.listErr = fmt.Errorf("ListResources: %w", sdk.ErrNotSupported)
	if sbs, err := Sandboxes(ctx, "fake", p, sdk.Config{}, Options{}); err != nil || sbs != nil {
		t.Errorf("a provider without resources: %+v, %v", sbs, err)
	}
	rep := Run(ctx, nil, []Provider{{Name: "fake", Provider: &fakeProvider{listErr: errors.New("daemon down")}}}, Options{})
	if len(rep.Errors) != 1 || !strings.HasPrefix(rep.Errors[0].Error(), "sandbox fake (defaults): ") {
		t.Errorf("Run errors %v", rep.Errors)
	}
	rep = Run(ctx, nil, []Provider{{Name: "fake", Block: "sandbox.fake.f", Provider: &fakeProvider{listErr: errors.New("daemon down")}}}, Options{})
	if len(rep.Errors) != 1 || !strings.HasPrefix(rep.Errors[0].Error(), "sandbox sandbox.fake.f (fake): ") {
		t.Errorf("Run errors of a block %v", rep.Errors)
	}
}

// Each provider's resource calls get its config; a resource listed with
// a block's config and again with the defaults is collected once, through
// the block, and the report names the block it was made for.
func TestFakeConfigsAndDuplicates(t *testing.T) {
	t.Parallel()
	l := labels(t, deadPID(t))
	l[sdk.LabelSandbox] = "sandbox.fake.f"
	p := &fakeProvider{caps: &sdk.SandboxCapabilities{Contract: sdk.ContractBindMount}, resources: []sdk.Resource{{ID: "dead", Labels: l}}}
	block := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"endpoint": cty.StringVal("https://e.example")})}
	rep := Run(context.Background(), nil, []Provider{
		{Name: "fake", Block: "sandbox.fake.f", Config: block, Provider: p},
		{Name: "fake", Provider: p},
	}, Options{})
	if len(rep.Errors) != 0 || len(rep.Sandboxes) != 1 || rep.Sandboxes[0].Action != Removed || rep.Sandboxes[0].Block() != "sandbox.fake.f" {
		t.Fatalf("report %+v", rep)
	}
	if want := []string{"list:https://e.example", "remove:https://e.example", "list:defaults"}; !slices.Equal(p.configs, want) {
		t.Errorf("resource calls got %q, want %q", p.configs, want)
	}
}

// TestFakeRunScopedCollectsOneLiveRun: with Options.Mine and Run, gc
// collects the resources of that run of this live process (a run whose
// sandbox plugin died), and none of its other runs' or of dead processes.
func TestFakeRunScopedCollectsOneLiveRun(t *testing.T) {
	t.Parallel()
	mine, other, dead := labels(t, os.Getpid()), labels(t, os.Getpid()), labels(t, deadPID(t))
	mine[sdk.LabelRun], other[sdk.LabelRun] = "mine-1", "other-1"
	dead[sdk.LabelRun] = "mine-1"
	p := &fakeProvider{caps: &sdk.SandboxCapabilities{Contract: sdk.ContractBindMount}, resources: []sdk.Resource{
		{ID: "mine", Labels: mine}, {ID: "other", Labels: other}, {ID: "dead", Labels: dead},
	}}
	sbs, err := Sandboxes(context.Background(), "fake", p, sdk.Config{}, Options{Mine: true, Run: "mine-1"})
	if err != nil || len(sbs) != 1 || sbs[0].Action != Removed || !slices.Equal(p.removed, []string{"mine"}) {
		t.Fatalf("gc: %+v, %v, removed %v", sbs, err, p.removed)
	}
	// Without Run: every run of this process (they have all ended).
	p.removed = nil
	sbs, err = Sandboxes(context.Background(), "fake", p, sdk.Config{}, Options{Mine: true})
	if err != nil || len(sbs) != 2 || !slices.Equal(p.removed, []string{"mine", "other"}) {
		t.Fatalf("gc: %+v, %v, removed %v", sbs, err, p.removed)
	}
}
