// Package podman is sanddune's Podman sandbox provider (bind-mount
// contract), with the docker provider's layout: one container per run kept
// alive by `sleep infinity` under podman's init (catatonit), the host
// worktree at /home/agent/workspace, the git metadata it needs at its own
// absolute host paths, and one `podman exec` per command as the host
// UID:GID with HOME=/home/agent.
//
// Podman is daemonless, so the provider drives the podman CLI as its users
// do: argv only (never a shell), `--format json` where it reads output
// (docs/adr/0010). It works rootful and rootless alike: rootless, the
// container gets `--userns keep-id` by default so that files the agent
// writes belong to the host user.
//
// What the agent can reach: the container's own filesystem, the worktree
// (read-write), exactly the git metadata paths the host hands over in
// CreateRequest.GitMounts (with their read-only flags), the `mount` blocks,
// and the network(s) configured (`network = "none"`: none), only as far as
// an `egress` policy allows (egress.go).
package podman

import (
	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
)

// Version is the plugin's own version.
const Version = "0.1.0"

// Provider implements sdk.SandboxProvider, sdk.CommandProvider and
// sdk.ResourceLister for Podman.
type Provider struct {
	containerkit.Base
	checked checkedConfigs
	homes   *containerkit.Homes
}

var (
	_ sdk.SandboxProvider = (*Provider)(nil)
	_ sdk.CommandProvider = (*Provider)(nil)
	_ sdk.ResourceLister  = (*Provider)(nil)
)

// New returns the podman sandbox provider.
func New() sdk.SandboxProvider {
	return &Provider{Base: containerkit.Base{
		Engine:      engine,
		Version:     Version,
		Description: "Podman containers (rootful or rootless) with the worktree bind-mounted",
		TTY:         false,
		Egress:      true,
		Attributes:  attributes,
		Decode: func(cfg sdk.Config) (containerkit.Config, sdk.Diagnostics) {
			c, diags := decodeConfig(cfg)
			return c.Config, diags
		},
	}, checked: checkedConfigs{cache: preflightCache()}, homes: containerkit.NewHomes(engine.Name)}
}
