package docker

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/docker/go-units"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
	"github.com/zclconf/go-cty/cty"
)

// Fixed sandbox layout (the same as the predecessor's images expect).
const (
	homeDir      = "/home/agent"
	workspaceDir = "/home/agent/workspace"
)

// minMemory is the smallest memory limit the docker daemon accepts.
const minMemory = 6 * 1024 * 1024

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
	Image     string
	Env       map[string]string
	Mounts    []sandboxkit.Mount // SandboxPath absolute (containerPath)
	Networks  []string
	CPUs      float64
	Memory    int64
	PidsLimit int64
	Devices   []deviceConfig
	Groups    []string
	UID, GID  *int
}

type deviceConfig struct {
	HostPath, ContainerPath, Permissions string
}

// networkNone reports whether the container gets no network.
func (c config) networkNone() bool { return len(c.Networks) == 1 && c.Networks[0] == "none" }

// decodeConfig decodes and validates a block. Missing and null attributes
// take their defaults, so partial objects (tests, library use) work.
func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d sandboxkit.Decoder
	v := cfg.Value
	c := config{
		Image:  d.String(v, "image"),
		Env:    d.Env(v, "env"),
		Groups: d.StringList(v, "groups"),
	}
	if c.Image != "" && strings.ContainsAny(c.Image, " \t\n") {
		d.Errorf("image", "invalid image name", "%q contains whitespace", c.Image)
	}

	nv := sandboxkit.Attr(v, "network")
	switch {
	case nv.IsNull():
	case nv.Type() == cty.String:
		c.Networks = []string{nv.AsString()}
	default:
		c.Networks = d.StringList(v, "network")
	}
	for _, n := range c.Networks {
		if strings.TrimSpace(n) == "" {
			d.Errorf("network", "empty network name", "")
		}
		if n == "none" && len(c.Networks) > 1 {
			d.Errorf("network", `"none" cannot be combined with other networks`, "")
		}
	}

	if f, ok := d.Number(v, "cpus"); ok {
		c.CPUs, _ = f.Float64()
		if c.CPUs <= 0 {
			d.Errorf("cpus", "cpus must be greater than 0", "")
		}
	}
	if s := d.String(v, "memory"); s != "" {
		n, err := units.RAMInBytes(s)
		switch {
		case err != nil:
			d.Errorf("memory", "invalid memory size", `%q: use a number with a unit, e.g. "512m" or "2g"`, s)
		case n < minMemory:
			d.Errorf("memory", "memory limit too small", "docker needs at least 6m, got %q", s)
		}
		c.Memory = n
	}
	if n, ok := d.Int(v, "pids_limit"); ok {
		if n <= 0 {
			d.Errorf("pids_limit", "pids_limit must be greater than 0", "")
		}
		c.PidsLimit = n
	}
	for i, spec := range d.StringList(v, "devices") {
		dev, err := parseDevice(spec)
		if err != nil {
			d.Errorf(fmt.Sprintf("devices.%d", i), "invalid device", "%v", err)
			continue
		}
		c.Devices = append(c.Devices, dev)
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
		c.Mounts[i].SandboxPath = containerPath(c.Mounts[i].SandboxPath)
	}
	return c, d.Diags
}

// containerPath maps a configured (and validated) container path to an
// absolute one: ~ is the agent home, relative paths are under the workspace.
func containerPath(p string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		return path.Join(homeDir, p[1:])
	case path.IsAbs(p):
		return path.Clean(p)
	}
	return path.Join(workspaceDir, p)
}

var devicePerms = regexp.MustCompile(`^[rwm]{1,3}$`)

func parseDevice(spec string) (deviceConfig, error) {
	parts := strings.Split(spec, ":")
	if len(parts) > 3 || parts[0] == "" {
		return deviceConfig{}, fmt.Errorf("%q: want host[:container[:permissions]]", spec)
	}
	dev := deviceConfig{HostPath: parts[0], ContainerPath: parts[0], Permissions: "rwm"}
	if len(parts) == 2 && devicePerms.MatchString(parts[1]) {
		dev.Permissions = parts[1]
	} else if len(parts) >= 2 {
		dev.ContainerPath = parts[1]
	}
	if len(parts) == 3 {
		if !devicePerms.MatchString(parts[2]) {
			return deviceConfig{}, fmt.Errorf("%q: permissions must be a combination of r, w and m", spec)
		}
		dev.Permissions = parts[2]
	}
	if !path.IsAbs(dev.HostPath) || !path.IsAbs(dev.ContainerPath) {
		return deviceConfig{}, fmt.Errorf("%q: device paths must be absolute", spec)
	}
	return dev, nil
}

var tagUnsafe = regexp.MustCompile(`[^a-z0-9_.-]`)

// defaultImage is sanddune:<last path segment of the repo>, made a valid tag.
func defaultImage(repo string) string {
	tag := tagUnsafe.ReplaceAllString(strings.ToLower(filepath.Base(filepath.Clean(repo))), "-")
	tag = strings.TrimLeft(tag, ".-")
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if repo == "" || tag == "" {
		tag = "local"
	}
	return "sanddune:" + tag
}

func (c config) image(repo string) string {
	if c.Image != "" {
		return c.Image
	}
	return defaultImage(repo)
}
