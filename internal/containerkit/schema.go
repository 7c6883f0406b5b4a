package containerkit

import (
	"fmt"
	"os"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/mounts"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Engine names a container engine in the schema's descriptions and in
// messages: Name is its command ("docker": `docker --cpus`, `sanddune
// docker build-image`), Title its proper name ("Docker").
type Engine struct {
	Name, Title string
}

// Schema is a container engine's provider block: the attributes every
// engine shares (image, env, network, cpus, memory, pids_limit, devices,
// selinux_label), then the engine's own, and the mount block.
func (e Engine) Schema(own ...sdk.Attribute) sdk.Schema {
	attrs := []sdk.Attribute{
		{Name: "image", Type: cty.String, Description: fmt.Sprintf("Image to run; default sanddune:<repo-dir-name> (built with `sanddune %s build-image`).", e.Name)},
		{Name: "env", Type: cty.Map(cty.String), Description: "Environment for every command in the container."},
		{Name: "network", Type: cty.DynamicPseudoType, Description: e.Title + ` network name or list of names; "none" cuts the container off the network.`},
		{Name: "cpus", Type: cty.Number, Description: fmt.Sprintf("CPU limit, fractional allowed (%s --cpus).", e.Name)},
		{Name: "memory", Type: cty.String, Description: `Memory limit, e.g. "512m" or "2g".`},
		{Name: "pids_limit", Type: cty.Number, Description: "Maximum number of processes in the container."},
		{Name: "devices", Type: cty.List(cty.String), Description: fmt.Sprintf("Host devices, host[:container[:permissions]] (%s --device).", e.Name)},
		{Name: "selinux_label", Type: cty.DynamicPseudoType, Description: `Relabel bind mounts for SELinux: "z" (shared), "Z" (private; the shared git metadata still gets "z") or false; default "z" when SELinux is enforcing.`},
	}
	return sdk.Schema{Attributes: append(attrs, own...), Blocks: []sdk.NestedBlock{mountBlock.Schema()}}
}

var mountBlock = mounts.Block{
	Description:         "Extra host path mounted into the container.",
	SandboxPath:         "Container path: absolute, ~/... (the agent home), or relative to the workspace.",
	SandboxPathRequired: true,
}

// Config holds the decoded attributes every engine shares.
type Config struct {
	Image    string
	Env      map[string]string
	Mounts   []mounts.Mount // SandboxPath absolute (ContainerPath)
	Networks []string
	Limits
	Devices      []Device
	SELinuxLabel string
}

// Decode decodes and validates the shared attributes and the mount blocks
// of v. Missing and null attributes take their defaults, so partial
// objects (tests, library use) work.
func Decode(d *sandboxkit.Decoder, v cty.Value) Config {
	c := Config{
		Image:        d.String(v, "image"),
		Env:          d.Env(v, "env"),
		Limits:       DecodeLimits(d, v),
		Networks:     Networks(d, v, "network"),
		Devices:      Devices(d, v, "devices"),
		SELinuxLabel: SELinuxLabel(d, v, "selinux_label"),
	}
	if c.Image != "" && strings.ContainsAny(c.Image, " \t\n") {
		d.Errorf("image", "invalid image name", "%q contains whitespace", c.Image)
	}
	c.Mounts = mountBlock.Decode(d, v)
	for i := range c.Mounts {
		c.Mounts[i].SandboxPath = ContainerPath(c.Mounts[i].SandboxPath)
	}
	return c
}

// ImageFor is the configured image, or DefaultImage of the repo.
func (c Config) ImageFor(repo string) string {
	if c.Image != "" {
		return c.Image
	}
	return DefaultImage(repo)
}

// ImageNotFound is the error of a create whose image is missing.
func (e Engine) ImageNotFound(image string, err error) error {
	return fmt.Errorf("image %q not found locally: build it with `sanddune %s build-image`: %w", image, e.Name, err)
}

// BuildImageFix is the command that builds the image a block runs: with
// --image-name when the block names one.
func (e Engine) BuildImageFix(c Config, image string) string {
	fix := "sanddune " + e.Name + " build-image"
	if c.Image != "" {
		fix += " --image-name " + image
	}
	return fix
}

// CheckHostPaths reports, for preflight, the devices (unless the engine
// runs elsewhere: checkDevices false) and mount sources missing on this
// host, each saying what to fix.
func (c Config) CheckHostPaths(repo string, checkDevices bool) []error {
	var errs []error
	if checkDevices {
		for _, d := range c.Devices {
			if _, err := os.Stat(d.HostPath); err != nil {
				errs = append(errs, fmt.Errorf("device %s does not exist on this host: fix devices", d.HostPath))
			}
		}
	}
	for i, m := range c.Mounts {
		if _, err := m.Source(repo); err != nil {
			errs = append(errs, fmt.Errorf("mount.%d: %w: create it or fix the mount", i, err))
		}
	}
	return errs
}
