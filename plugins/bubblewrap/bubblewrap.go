// Package bubblewrap is sanddune's daemonless Linux sandbox provider
// (bind-mount contract). Every Exec runs under `bwrap` with the host root
// read-only, the worktree, its git metadata and a private home and /tmp
// read-write, new PID, IPC and UTS namespaces, no capabilities, and
// optionally no network. Agent CLIs therefore come from the host.
//
// What the agent can reach: every host file its user can read (read-only)
// except the paths in `hide` (credential stores and the docker socket by
// default; checked at every Exec, so a socket created later is hidden
// too); it can write only the worktree, the git metadata the worktree
// needs, the sandbox's own home and /tmp, and rw `mount` blocks.
package bubblewrap

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// Version is the plugin's own version.
const Version = "0.1.0"

// Provider implements sdk.SandboxProvider and sdk.ResourceLister.
type Provider struct{}

var (
	_ sdk.SandboxProvider = (*Provider)(nil)
	_ sdk.ResourceLister  = (*Provider)(nil)
)

// New returns the bubblewrap sandbox provider.
func New() sdk.SandboxProvider { return &Provider{} }

func (p *Provider) Info(ctx context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version:     Version,
		Description: "Linux namespaces via bwrap: host root read-only, worktree read-write, no daemon",
		Sandbox: &sdk.SandboxCapabilities{
			Contract:    sdk.ContractBindMount,
			NetworkNone: true,
			TTY:         true,
			Confines:    true,
			Egress:      true,
		},
	}, nil
}

func (p *Provider) ConfigSchema(ctx context.Context) (sdk.Schema, error) { return schema(), nil }

// Describe returns the block's env (the sandbox-provider env layer).
func (p *Provider) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	c, diags := decodeConfig(cfg)
	return sdk.SandboxDescription{Env: c.Env}, diags.Err()
}

func (p *Provider) Configure(ctx context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	_, diags := decodeConfig(cfg)
	return diags, nil
}

// probeTimeout bounds the preflight's trial sandbox.
const probeTimeout = 20 * time.Second

// Preflight checks that bwrap is installed and can build a sandbox with
// the namespaces this config needs, and that mount host paths exist.
func (p *Provider) Preflight(ctx context.Context, req sdk.PreflightRequest) error {
	cfg, diags := decodeConfig(req.Config)
	if err := diags.Err(); err != nil {
		return err
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("bubblewrap needs Linux (this is %s): use the docker sandbox provider here", runtime.GOOS)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return errors.New("bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install bubblewrap`, Arch: `pacman -S bubblewrap`)")
	}
	if err := probe(ctx, bwrap, cfg.NetworkNone); err != nil {
		return fmt.Errorf("bwrap cannot create a sandbox here (%v): unprivileged user namespaces are probably disabled; enable them (`sysctl kernel.unprivileged_userns_clone=1`, `sysctl user.max_user_namespaces=15000`, or on Ubuntu 24.04+ `sysctl kernel.apparmor_restrict_unprivileged_userns=0`) or use another sandbox",
			err)
	}
	var errs []error
	for i, m := range cfg.Mounts {
		if _, err := m.Source(req.HostRepoPath); err != nil {
			errs = append(errs, fmt.Errorf("mount.%d: %w: create it or fix the mount", i, err))
		}
	}
	return errors.Join(errs...)
}

// probe starts a keeper and runs `true` in its PID namespace: the whole
// path every Exec takes.
func probe(ctx context.Context, bwrap string, networkNone bool) error {
	k, err := startKeeper(bwrap)
	if err != nil {
		return err
	}
	defer k.stop()
	nsArgs, files := k.joinArgs(false)
	args := append(append(nsArgs, namespaceArgs(networkNone)...), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true")
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// Like an Exec, try again when bwrap's setup fails (it races with host
	// mount changes).
	for attempt := 1; ; attempt++ {
		cmd := exec.CommandContext(ctx, bwrap, args...)
		cmd.ExtraFiles = files
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		if attempt == setupAttempts || ctx.Err() != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
	}
}

// namespaceArgs isolate every Exec: its own mount, IPC and UTS namespaces,
// no capabilities (even when sanddune runs as root), and without network
// when asked. The PID namespace is the keeper's, and so is the lifetime:
// no --die-with-parent (see Exec).
func namespaceArgs(networkNone bool) []string {
	args := []string{"--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL"}
	if networkNone {
		args = append(args, "--unshare-net")
	}
	return args
}
