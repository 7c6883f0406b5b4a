package docker

import (
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/containerkit"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
	"github.com/zclconf/go-cty/cty"
)

func schema() sdk.Schema {
	return sdk.Schema{
		Attributes: []sdk.Attribute{
			{Name: "image", Type: cty.String, Description: "Image to run; default sanddune:<repo-dir-name>."},
			{Name: "env", Type: cty.Map(cty.String), Description: "Environment for every command in the container."},
			{Name: "network", Type: cty.DynamicPseudoType, Description: `Docker network name or list of names; "none" cuts the container off the network.`},
			{Name: "cpus", Type: cty.Number, Description: "CPU limit, fractional allowed (docker --cpus)."},
			{Name: "memory", Type: cty.String, Description: `Memory limit, e.g. "512m" or "2g".`},
			{Name: "pids_limit", Type: cty.Number, Description: "Maximum number of processes in the container."},
			{Name: "devices", Type: cty.List(cty.String), Description: "Host devices, host[:container[:permissions]] (docker --device)."},
			{Name: "groups", Type: cty.List(cty.String), Description: "Supplementary groups (names or numeric GIDs) for the container user."},
			{Name: "container_uid", Type: cty.Number, Description: "UID the container runs as; default the host UID."},
			{Name: "container_gid", Type: cty.Number, Description: "GID the container runs as; default the host GID."},
			{Name: "selinux_label", Type: cty.DynamicPseudoType, Description: `Relabel bind mounts for SELinux: "z" (shared), "Z" (private; the shared git metadata still gets "z") or false; default "z" when SELinux is enforcing.`},
		},
		Blocks: []sdk.NestedBlock{mountBlock.Schema()},
	}
}

var mountBlock = sandboxkit.MountBlock{
	Description:         "Extra host path mounted into the container.",
	SandboxPath:         "Container path: absolute, ~/... (the agent home), or relative to the workspace.",
	SandboxPathRequired: true,
}

// config is a decoded, validated provider block.
type config struct {
	Image    string
	Env      map[string]string
	Mounts   []sandboxkit.Mount // SandboxPath absolute (containerkit.ContainerPath)
	Networks []string
	containerkit.Limits
	Devices      []containerkit.Device
	Groups       []string
	UID, GID     *int
	SELinuxLabel string
}

// networkNone reports whether the container gets no network.
func (c config) networkNone() bool { return len(c.Networks) == 1 && c.Networks[0] == "none" }

// decodeConfig decodes and validates a block. Missing and null attributes
// take their defaults, so partial objects (tests, library use) work.
func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d sandboxkit.Decoder
	v := cfg.Value
	c := config{
		Image:        d.String(v, "image"),
		Env:          d.Env(v, "env"),
		Limits:       containerkit.DecodeLimits(&d, v),
		Groups:       d.StringList(v, "groups"),
		Networks:     containerkit.Networks(&d, v, "network"),
		Devices:      containerkit.Devices(&d, v, "devices"),
		SELinuxLabel: containerkit.SELinuxLabel(&d, v, "selinux_label"),
	}
	if c.Image != "" && strings.ContainsAny(c.Image, " \t\n") {
		d.Errorf("image", "invalid image name", "%q contains whitespace", c.Image)
	}

	for i, g := range c.Groups {
		if strings.TrimSpace(g) == "" {
			d.Errorf(fmt.Sprintf("groups.%d", i), "empty group", "")
		}
	}
	for _, name := range []string{"container_uid", "container_gid"} {
		n, ok := d.Int(v, name)
		if !ok {
			continue
		}
		if n < 0 || n > 1<<31-1 {
			d.Errorf(name, "invalid id", "%d is not a valid id", n)
			continue
		}
		id := int(n)
		if name == "container_uid" {
			c.UID = &id
		} else {
			c.GID = &id
		}
	}

	c.Mounts = mountBlock.Decode(&d, v)
	for i := range c.Mounts {
		c.Mounts[i].SandboxPath = containerkit.ContainerPath(c.Mounts[i].SandboxPath)
	}
	return c, d.Diags
}

func (c config) image(repo string) string {
	if c.Image != "" {
		return c.Image
	}
	return containerkit.DefaultImage(repo)
}
