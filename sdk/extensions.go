package sdk

import "context"

// Optional interfaces. A provider implements them when it can; the host
// checks the capability before calling (the gRPC adapters report which ones
// the plugin implements).

// CommandProvider lets a plugin add subcommands under its own name, e.g.
// `sanddune docker build-image`. The host forwards argv and streams output.
type CommandProvider interface {
	Commands(ctx context.Context) ([]CommandSpec, error)
	RunCommand(ctx context.Context, req RunCommandRequest, out OutputFunc) (exitCode int, err error)
}

// CommandSpec describes one plugin subcommand for help output.
type CommandSpec struct {
	Name  string
	Usage string // e.g. "build-image [--image-name N] [--dockerfile F]"
	Short string
}

// RunCommandRequest is one invocation of a plugin subcommand.
type RunCommandRequest struct {
	Name string
	Args []string
	// Cwd is the user's working directory; HostRepoPath the repo root (may be empty).
	Cwd          string
	HostRepoPath string
	HostUID      int
	HostGID      int
}

// ResourceLister lets `sanddune gc` find what a provider left behind. The
// host decides which resources are orphans from their labels (the run's
// sanddune process is gone) and asks the provider to remove them.
//
// cfg is a sandbox block's config, decoded against the provider's schema
// as Create gets it: the provider looks where that block's sandboxes live
// (its endpoint, credentials, cluster, namespace...). A null cfg (the
// zero Config) means the provider's defaults: gc asks every installed
// provider that way, so without the credentials or endpoint it needs a
// provider lists nothing rather than failing.
type ResourceLister interface {
	ListResources(ctx context.Context, cfg Config) ([]Resource, error)
	RemoveResource(ctx context.Context, cfg Config, id string) error
}

// SandboxRecoverer lets `sanddune gc` reattach to a resource that
// ListResources returned, to salvage the work in it before RemoveResource.
// Isolated providers implement it: their sandboxes may hold commits and
// changes of a run that died before syncing them out.
type SandboxRecoverer interface {
	// Recover returns a handle on the live sandbox resourceID. Exec, CopyIn
	// and CopyOut work as on the sandbox Create returned, with the
	// provider's base environment (CreateRequest.Env is not kept). Close
	// stops what the handle started and releases it, but leaves the
	// resource in place: RemoveResource removes it. An unknown or foreign
	// resourceID is an error. cfg is the config ListResources was given.
	Recover(ctx context.Context, cfg Config, resourceID string) (Sandbox, error)
}

// Resource is one provider resource labelled by sanddune.
type Resource struct {
	ID     string
	Labels map[string]string
}

// Labels the host sets on every CreateRequest that a provider may need to
// read. A provider stores all of a request's labels with the sandbox and
// returns them in ListResources: the host judges orphans from its own
// labels (the sanddune process, its host, the run's repository and branch).
// A provider that can keep only a few (as tags) keeps LabelRun, LabelHost
// and LabelPID.
const (
	LabelRun     = "sanddune.run"     // run id
	LabelSandbox = "sanddune.sandbox" // sandbox block address, e.g. sandbox.docker.default
	LabelPID     = "sanddune.pid"     // pid of the sanddune process that owns the run
	LabelHost    = "sanddune.host"    // hostname of that process
)
