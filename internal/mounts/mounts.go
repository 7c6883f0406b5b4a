// Package mounts decodes the `mount` blocks of the in-tree sandbox
// providers (bubblewrap, docker, podman) and resolves their host paths.
package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Mount is one decoded `mount` block.
type Mount struct {
	// HostPath is as configured: absolute, ~/..., or relative to the
	// repository (see resolveHostPath and Source).
	HostPath string
	// SandboxPath is as configured; "" when unset.
	SandboxPath string
	ReadOnly    bool
}

// Block describes a provider's `mount` blocks (a list): host_path
// (required), sandbox_path and readonly.
type Block struct {
	// Description is the block's.
	Description string
	// SandboxPath describes sandbox_path: what it may be and what a
	// relative path is relative to.
	SandboxPath string
	// SandboxPathRequired makes sandbox_path required.
	SandboxPathRequired bool
}

// Schema is the block's schema, named "mount".
func (b Block) Schema() sdk.NestedBlock {
	return sdk.NestedBlock{
		TypeName:    "mount",
		Nesting:     sdk.NestingList,
		Description: b.Description,
		Body: sdk.Schema{Attributes: []sdk.Attribute{
			{Name: "host_path", Type: cty.String, Required: true, Description: "Host path: absolute, ~/..., or relative to the repository."},
			{Name: "sandbox_path", Type: cty.String, Required: b.SandboxPathRequired, Description: b.SandboxPath},
			{Name: "readonly", Type: cty.Bool, Description: "Mount read-only."},
		}},
	}
}

// Decode decodes the mount blocks of the provider block v, with
// diagnostics on mount.N.<attribute>: host_path is required, sandbox_path
// too when SandboxPathRequired, and a relative sandbox_path must not leave
// the directory it is relative to.
func (b Block) Decode(d *sandboxkit.Decoder, v cty.Value) []Mount {
	ms := sandboxkit.Attr(v, "mount")
	if ms.IsNull() || !ms.CanIterateElements() {
		return nil
	}
	var out []Mount
	i := 0
	for it := ms.ElementIterator(); it.Next(); i++ {
		_, m := it.Element()
		md := sandboxkit.Decoder{Prefix: fmt.Sprintf("%smount.%d.", d.Prefix, i)}
		mc := Mount{HostPath: md.String(m, "host_path"), SandboxPath: md.String(m, "sandbox_path"), ReadOnly: md.Bool(m, "readonly")}
		if mc.HostPath == "" {
			md.Errorf("host_path", "host_path is required", "")
		}
		switch p := path.Clean(mc.SandboxPath); {
		case mc.SandboxPath == "":
			if b.SandboxPathRequired {
				md.Errorf("sandbox_path", "sandbox_path is required", "")
			}
		case p == ".." || strings.HasPrefix(p, "../"):
			md.Errorf("sandbox_path", "invalid sandbox_path", "relative path %q leaves the directory it is relative to", mc.SandboxPath)
		}
		out = append(out, mc)
		d.Diags = append(d.Diags, md.Diags...)
	}
	return out
}

// Source resolves m.HostPath against the repository (resolveHostPath) and
// checks that it exists.
func (m Mount) Source(repo string) (string, error) {
	src, err := resolveHostPath(m.HostPath, repo)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("host_path %q (resolved to %s) does not exist", m.HostPath, src)
	} else if err != nil {
		return "", fmt.Errorf("host_path %q: %w", m.HostPath, err)
	}
	return src, nil
}

// ExpandHome expands a leading ~ to the home of the user running the
// plugin.
func ExpandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expand %q: %w", p, err)
	}
	return filepath.Join(home, p[1:]), nil
}

// resolveHostPath makes a configured host path absolute and clean: ~ is
// the user's home, relative paths are under the repository repo.
func resolveHostPath(p, repo string) (string, error) {
	p, err := ExpandHome(p)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		if repo == "" {
			return "", fmt.Errorf("relative host_path %q needs a repository", p)
		}
		p = filepath.Join(repo, p)
	}
	return filepath.Clean(p), nil
}
