// Package local is the built-in "local" sandbox provider: an isolated
// sandbox that is a private directory under the system temp dir.
//
// Each sandbox is a directory sanddune-local-<run>-XXXX holding repo/ (the
// repository, created empty; the core syncs the code in with git), home/
// (HOME for every command) and tmp/ (TMPDIR). Commands run on this machine
// as the user running sanddune, in their own process group, with a working
// directory confined to the sandbox directory. A timeout or cancellation
// kills the whole process group, and so does the end of the command:
// background jobs do not outlive the Exec that started them. Every process
// carries SANDDUNE_LOCAL_SANDBOX=<dir> in its environment: Close, Recover
// and RemoveResource kill the processes that carry exactly that entry, and
// their descendants (daemons that left the group with setsid, an agent
// whose sanddune was killed), then Close removes the directory. A process
// is never killed for working under the directory: one that clears its
// environment and detaches from every marked ancestor is beyond reach
// (bubblewrap's PID namespace is not). For `sanddune gc`,
// ListResources lists the directories by their labels file, Recover
// reattaches to one (so the host can sync its work out; closing that handle
// leaves the directory) and RemoveResource removes it.
//
// The local provider is NOT a security boundary. The agent runs as you, on
// your machine, with your network and everything your user can read and
// write; confinement only keeps honest commands and copies inside the
// sandbox directory. Use a container or bubblewrap provider to contain an
// agent.
package local

import (
	"context"
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/procgroup"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Version is the provider's version.
const Version = "0.1.0"

// dirs are the sandbox directories; each holds the CreateRequest labels
// for gc.
var dirs = sandboxkit.TempDirs{Prefix: "sanddune-local-", LabelsFile: "sanddune-labels.json"}

// Provider is the local sandbox provider. It also implements
// sdk.ResourceLister and sdk.SandboxRecoverer, so `sanddune gc` can salvage
// and remove directories left behind by a sanddune process that died.
type Provider struct{}

var (
	_ sdk.SandboxProvider  = (*Provider)(nil)
	_ sdk.ResourceLister   = (*Provider)(nil)
	_ sdk.SandboxRecoverer = (*Provider)(nil)
)

// New returns the local sandbox provider.
func New() sdk.SandboxProvider { return &Provider{} }

// Info describes the provider.
func (*Provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version:     Version,
		Description: "private temp directory on this machine; NOT a security boundary (the agent runs as you)",
		// TTY, but no Confines: the agent runs as you, on your machine.
		Sandbox: &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated, TTY: true},
	}, nil
}

// config is a decoded local block.
type config struct {
	Env map[string]string `cty:"env"`
}

// ConfigSchema declares env, the one setting of a local sandbox.
func (*Provider) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{sandboxkit.EnvAttribute()}}, nil
}

// Configure checks the env keys.
func (*Provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	var c config
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	return sdk.CheckEnv(c.Env, "env"), nil
}

// Describe returns the block's env.
func (*Provider) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	var c config
	err := cfg.Decode(&c)
	return sdk.SandboxDescription{Env: c.Env}, err
}

// Preflight checks that the temp dir is writable.
func (*Provider) Preflight(context.Context, sdk.PreflightRequest) error {
	if err := dirs.Check(); err != nil {
		return fmt.Errorf("local sandbox: %w", err)
	}
	return nil
}

// Create makes the sandbox directory.
func (*Provider) Create(_ context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	dir, err := dirs.Create(safeName(req.RunID)+"-", req.Labels)
	if err != nil {
		return nil, fmt.Errorf("local sandbox: %w", err)
	}
	s, err := newSandbox(dir, req)
	if err != nil {
		_ = sandboxkit.RemoveAll(dir)
		return nil, fmt.Errorf("local sandbox: %w", err)
	}
	return s, nil
}

// ListResources lists the sandbox directories under the temp dir that carry
// sanddune labels. The resource ID is the directory path. No attribute
// decides where a sandbox lives, so the config is not needed.
func (*Provider) ListResources(context.Context, sdk.Config) ([]sdk.Resource, error) {
	return dirs.List()
}

// RemoveResource kills what still runs in a sandbox listed by
// ListResources (its run's sanddune is dead) and removes its directory.
func (*Provider) RemoveResource(_ context.Context, _ sdk.Config, id string) error {
	if dir, err := dirs.Open(id); err == nil {
		if err := procgroup.KillMarked(marker(dir)); err != nil {
			return fmt.Errorf("local sandbox: %w", err)
		}
	}
	if err := dirs.Remove(id); err != nil {
		return fmt.Errorf("local sandbox: %w", err)
	}
	return nil
}

// Recover reattaches to a sandbox directory listed by ListResources, with
// the base environment only, once what still ran there (an agent whose
// sanddune was killed) is killed: its work is then what gc salvages.
// Closing it leaves the directory.
func (*Provider) Recover(_ context.Context, _ sdk.Config, id string) (sdk.Sandbox, error) {
	dir, err := dirs.Open(id)
	if err == nil {
		err = procgroup.KillMarked(marker(dir))
	}
	if err == nil {
		var s *sandbox
		if s, err = recoverSandbox(dir); err == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("local sandbox: %w", err)
}

// safeName keeps a run id usable in a directory name.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

var _ sdk.TTYSandbox = (*sandbox)(nil)
