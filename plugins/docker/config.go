package docker

import (
	"fmt"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/docker/go-units"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
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
		Blocks: []sdk.NestedBlock{{
			TypeName:    "mount",
			Nesting:     sdk.NestingList,
			Description: "Extra host path mounted into the container.",
			Body: sdk.Schema{Attributes: []sdk.Attribute{
				{Name: "host_path", Type: cty.String, Required: true, Description: "Host path: absolute, ~/..., or relative to the repository."},
				{Name: "sandbox_path", Type: cty.String, Required: true, Description: "Container path: absolute, ~/... (the agent home), or relative to the workspace."},
				{Name: "readonly", Type: cty.Bool, Description: "Mount read-only."},
			}},
		}},
	}
}

// config is a decoded, validated provider block.
type config struct {
	Image     string
	Env       map[string]string
	Mounts    []mountConfig
	Networks  []string
	CPUs      float64
	Memory    int64
	PidsLimit int64
	Devices   []deviceConfig
	Groups    []string
	UID, GID  *int
}

type mountConfig struct {
	HostPath    string
	SandboxPath string // absolute, after ~ and workspace resolution
	ReadOnly    bool
}

type deviceConfig struct {
	HostPath, ContainerPath, Permissions string
}

// networkNone reports whether the container gets no network.
func (c config) networkNone() bool { return len(c.Networks) == 1 && c.Networks[0] == "none" }

// decodeConfig decodes and validates a block. Missing and null attributes
// take their defaults, so partial objects (tests, library use) work.
func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	d := decoder{}
	v := cfg.Value
	c := config{
		Image:  d.str(v, "image"),
		Env:    d.strMap(v, "env"),
		Groups: d.strList(v, "groups"),
	}
	if c.Image != "" && strings.ContainsAny(c.Image, " \t\n") {
		d.errf("image", "invalid image name", "%q contains whitespace", c.Image)
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			d.errf("env", "invalid environment variable name", "%q", k)
		}
	}

	nv := attr(v, "network")
	switch {
	case nv.IsNull():
	case nv.Type() == cty.String:
		c.Networks = []string{nv.AsString()}
	default:
		c.Networks = d.strList(v, "network")
	}
	for _, n := range c.Networks {
		if strings.TrimSpace(n) == "" {
			d.errf("network", "empty network name", "")
		}
		if n == "none" && len(c.Networks) > 1 {
			d.errf("network", `"none" cannot be combined with other networks`, "")
		}
	}

	if f, ok := d.num(v, "cpus"); ok {
		c.CPUs, _ = f.Float64()
		if c.CPUs <= 0 {
			d.errf("cpus", "cpus must be greater than 0", "")
		}
	}
	if s := d.str(v, "memory"); s != "" {
		n, err := units.RAMInBytes(s)
		switch {
		case err != nil:
			d.errf("memory", "invalid memory size", `%q: use a number with a unit, e.g. "512m" or "2g"`, s)
		case n < minMemory:
			d.errf("memory", "memory limit too small", "docker needs at least 6m, got %q", s)
		}
		c.Memory = n
	}
	if n, ok := d.integer(v, "pids_limit"); ok {
		if n <= 0 {
			d.errf("pids_limit", "pids_limit must be greater than 0", "")
		}
		c.PidsLimit = n
	}
	for i, spec := range d.strList(v, "devices") {
		dev, err := parseDevice(spec)
		if err != nil {
			d.errf(fmt.Sprintf("devices.%d", i), "invalid device", "%v", err)
			continue
		}
		c.Devices = append(c.Devices, dev)
	}
	for i, g := range c.Groups {
		if strings.TrimSpace(g) == "" {
			d.errf(fmt.Sprintf("groups.%d", i), "empty group", "")
		}
	}
	for _, name := range []string{"container_uid", "container_gid"} {
		n, ok := d.integer(v, name)
		if !ok {
			continue
		}
		if n < 0 || n > 1<<31-1 {
			d.errf(name, "invalid id", "%d is not a valid id", n)
			continue
		}
		id := int(n)
		if name == "container_uid" {
			c.UID = &id
		} else {
			c.GID = &id
		}
	}

	mounts := attr(v, "mount")
	if !mounts.IsNull() && mounts.CanIterateElements() {
		i := 0
		for it := mounts.ElementIterator(); it.Next(); i++ {
			_, m := it.Element()
			md := decoder{prefix: fmt.Sprintf("mount.%d.", i)}
			mc := mountConfig{
				HostPath:    md.str(m, "host_path"),
				SandboxPath: md.str(m, "sandbox_path"),
				ReadOnly:    md.boolean(m, "readonly"),
			}
			if mc.HostPath == "" {
				md.errf("host_path", "host_path is required", "")
			}
			sp, err := resolveSandboxPath(mc.SandboxPath)
			if err != nil {
				md.errf("sandbox_path", "invalid sandbox_path", "%v", err)
			}
			mc.SandboxPath = sp
			c.Mounts = append(c.Mounts, mc)
			d.diags = append(d.diags, md.diags...)
		}
	}
	return c, d.diags
}

// resolveSandboxPath maps a configured container path to an absolute one:
// ~ is the agent home, relative paths are under the workspace.
func resolveSandboxPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("sandbox_path is required")
	case p == "~" || strings.HasPrefix(p, "~/"):
		return path.Join(homeDir, p[1:]), nil
	case path.IsAbs(p):
		return path.Clean(p), nil
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("relative path %q leaves the workspace", p)
	}
	return path.Join(workspaceDir, clean), nil
}

// resolveHostPath expands ~ and resolves relative paths against the repo.
func resolveHostPath(p, repo string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand %q: %w", p, err)
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		if repo == "" {
			return "", fmt.Errorf("relative host_path %q needs a repository", p)
		}
		p = filepath.Join(repo, p)
	}
	return filepath.Clean(p), nil
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

// decoder reads attributes of a cty object leniently and collects
// diagnostics for values of the wrong shape.
// Attribute paths in diagnostics start with prefix (e.g. "mount.0.").
type decoder struct {
	prefix string
	diags  sdk.Diagnostics
}

func (d *decoder) errf(attribute, summary, detail string, args ...any) {
	d.diags = append(d.diags, sdk.Diagnostic{
		Severity:  sdk.SeverityError,
		Summary:   summary,
		Detail:    fmt.Sprintf(detail, args...),
		Attribute: d.prefix + attribute,
	})
}

// attr returns an attribute of an object or map, or null when absent.
func attr(v cty.Value, name string) cty.Value {
	null := cty.NullVal(cty.DynamicPseudoType)
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() {
		return null
	}
	t := v.Type()
	switch {
	case t.IsObjectType() && t.HasAttribute(name):
		v = v.GetAttr(name)
	case t.IsMapType() && v.HasIndex(cty.StringVal(name)).True():
		v = v.Index(cty.StringVal(name))
	default:
		return null
	}
	if !v.IsKnown() {
		return null
	}
	return v
}

func (d *decoder) conv(v cty.Value, name string, t cty.Type, what string) (cty.Value, bool) {
	a := attr(v, name)
	if a.IsNull() {
		return a, false
	}
	c, err := convert.Convert(a, t)
	if err != nil || c.IsNull() {
		d.errf(name, "invalid "+name, "must be %s", what)
		return c, false
	}
	return c, true
}

func (d *decoder) str(v cty.Value, name string) string {
	if c, ok := d.conv(v, name, cty.String, "a string"); ok {
		return c.AsString()
	}
	return ""
}

func (d *decoder) boolean(v cty.Value, name string) bool {
	if c, ok := d.conv(v, name, cty.Bool, "true or false"); ok {
		return c.True()
	}
	return false
}

func (d *decoder) num(v cty.Value, name string) (*big.Float, bool) {
	if c, ok := d.conv(v, name, cty.Number, "a number"); ok {
		return c.AsBigFloat(), true
	}
	return nil, false
}

func (d *decoder) integer(v cty.Value, name string) (int64, bool) {
	f, ok := d.num(v, name)
	if !ok {
		return 0, false
	}
	n, acc := f.Int64()
	if acc != big.Exact {
		d.errf(name, "invalid "+name, "must be a whole number")
		return 0, false
	}
	return n, true
}

func (d *decoder) strList(v cty.Value, name string) []string {
	c, ok := d.conv(v, name, cty.List(cty.String), "a list of strings")
	if !ok || c.LengthInt() == 0 {
		return nil
	}
	var out []string
	for it := c.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			d.errf(name, "invalid "+name, "list elements must not be null")
			continue
		}
		out = append(out, e.AsString())
	}
	return out
}

func (d *decoder) strMap(v cty.Value, name string) map[string]string {
	c, ok := d.conv(v, name, cty.Map(cty.String), "a map of strings")
	if !ok || c.LengthInt() == 0 {
		return nil
	}
	out := map[string]string{}
	for it := c.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() {
			d.errf(name, "invalid "+name, "value of %q must not be null", k.AsString())
			continue
		}
		out[k.AsString()] = e.AsString()
	}
	return out
}
