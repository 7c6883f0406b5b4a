package bubblewrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/mounts"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// defaultHide are host credential stores and daemon sockets covered in
// every sandbox (when they exist): the host root is visible read-only, and
// these would hand the agent keys or a root-equivalent socket.
var defaultHide = []string{
	"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube",
	"~/.docker", "~/.netrc", "~/.git-credentials", "/run/docker.sock", "/var/run/docker.sock",
}

func schema() sdk.Schema {
	hide := make([]cty.Value, len(defaultHide))
	for i, h := range defaultHide {
		hide[i] = cty.StringVal(h)
	}
	return sdk.Schema{
		Attributes: []sdk.Attribute{
			{Name: "env", Type: cty.Map(cty.String), Description: "Environment for every command in the sandbox."},
			{Name: "network", Type: cty.String, Default: cty.StringVal("host"),
				Description: `"host" shares the host network; "none" gives the sandbox only its own loopback.`},
			{Name: "hide", Type: cty.List(cty.String), Default: cty.ListVal(hide),
				Description: "Host paths hidden from the sandbox (empty dir or file put over those that exist when a command starts); ~ is the host home."},
		},
		Blocks: []sdk.NestedBlock{mountBlock.Schema()},
	}
}

var mountBlock = mounts.Block{
	Description: "Extra host path bound into the sandbox.",
	SandboxPath: "Path in the sandbox (absolute, ~/..., or relative to the worktree); default host_path. An absolute path must exist on the host, or lie under /tmp or another writable mount.",
}

type config struct {
	Env         map[string]string
	NetworkNone bool
	Hide        []string
	Mounts      []mounts.Mount
}

func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d sandboxkit.Decoder
	v := cfg.Value
	c := config{Env: d.Env(v, "env"), Hide: defaultHide}
	switch n := d.String(v, "network"); n {
	case "", "host":
	case "none":
		c.NetworkNone = true
	default:
		d.Errorf("network", "invalid network", `%q: bubblewrap supports "host" and "none"`, n)
	}
	if !sandboxkit.Attr(v, "hide").IsNull() {
		c.Hide = d.StringList(v, "hide")
	}
	for i, h := range c.Hide {
		if h != "~" && !strings.HasPrefix(h, "~/") && !filepath.IsAbs(h) {
			d.Errorf(fmt.Sprintf("hide.%d", i), "invalid hide path", "%q must be absolute or start with ~/", h)
		}
	}
	c.Mounts = mountBlock.Decode(&d, v)
	checkMountTargets(&d, c.Mounts)
	return c, d.Diags
}

// checkMountTargets refuses, before anything starts, a mount whose sandbox
// path bwrap could not create: the sandbox sees the host's root read-only,
// so an absolute sandbox_path must exist on this machine or lie in a
// writable place (/tmp, or another writable mount). Relative and ~/ paths
// are in the worktree and the home, which are writable.
func checkMountTargets(d *sandboxkit.Decoder, mounts []mounts.Mount) {
	writable := []string{"/tmp"}
	for _, m := range mounts {
		if !m.ReadOnly && filepath.IsAbs(m.SandboxPath) {
			writable = append(writable, filepath.Clean(m.SandboxPath))
		}
	}
	for i, m := range mounts {
		if !filepath.IsAbs(m.SandboxPath) {
			continue
		}
		p := filepath.Clean(m.SandboxPath)
		if slices.ContainsFunc(writable, func(w string) bool { return w != p && sandboxkit.Within(p, w) }) {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			continue
		}
		d.Errorf(fmt.Sprintf("mount.%d.sandbox_path", i), "sandbox_path cannot be created",
			"%s does not exist on this machine, and the sandbox sees the host's root read-only, so bwrap cannot create it. "+
				"Use a path that exists, one under /tmp or ~/, a path relative to the worktree, or one inside another writable mount.", p)
	}
}
