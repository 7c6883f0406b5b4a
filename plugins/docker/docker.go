// Package docker is sanddune's Docker sandbox provider (bind-mount
// contract). Each sandbox is one container kept alive by `sleep infinity`
// under docker's init; the host worktree is mounted at
// /home/agent/workspace and the git metadata it needs at its own absolute
// host paths, so git works inside on the worktree's branch. Commands run
// through the exec API as the host UID:GID with HOME=/home/agent.
//
// What the agent can reach: the container's own filesystem, the worktree
// (read-write), exactly the git metadata paths the host hands over in
// CreateRequest.GitMounts (with their read-only flags), the `mount` blocks,
// and the network(s) configured (`network = "none"`: none), only as far as
// an `egress` policy allows (egress.go). Nothing else of
// the host is mounted; `sudo` execs run as root inside the container only.
//
// It talks to the daemon only through the Engine API (no docker CLI), with
// API version negotiation, so it works from Debian's docker.io 20.10 (API
// 1.41) to current engines.
package docker

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/docker/docker/client"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
)

// Version is the plugin's own version.
const Version = "0.1.0"

// Provider implements sdk.SandboxProvider, sdk.CommandProvider and
// sdk.ResourceLister for Docker.
type Provider struct {
	containerkit.Base
	homes *containerkit.Homes

	mu  sync.Mutex
	cli *client.Client
	// noMounts (a string) says why the daemon Preflight asked cannot
	// mount the host's directories for its containers' user (OwnMounts).
	noMounts atomic.Value
}

var (
	_ sdk.SandboxProvider = (*Provider)(nil)
	_ sdk.CommandProvider = (*Provider)(nil)
	_ sdk.ResourceLister  = (*Provider)(nil)
)

// New returns the docker sandbox provider.
func New() sdk.SandboxProvider {
	return &Provider{Base: containerkit.Base{
		Engine:      engine,
		Version:     Version,
		Description: "Docker containers with the worktree bind-mounted",
		TTY:         true,
		Egress:      true,
		Attributes:  attributes,
		Decode: func(cfg sdk.Config) (containerkit.Config, sdk.Diagnostics) {
			c, diags := decodeConfig(cfg)
			return c.Config, diags
		},
	}, homes: containerkit.NewHomes(engine.Name)}
}

// client returns the shared Engine API client (from DOCKER_HOST etc.).
func (p *Provider) client() (*client.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cli == nil {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation(), warmConnections)
		if err != nil {
			return nil, err
		}
		p.cli = cli
	}
	return p.cli, nil
}

// warmConnections keeps as many idle daemon connections as concurrent runs
// use (net/http keeps 2 per host): runs sharing the client reuse them
// instead of dialling again.
func warmConnections(c *client.Client) error {
	if tr, ok := c.HTTPClient().Transport.(*http.Transport); ok {
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 32, 32
	}
	return nil
}
