package podman

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// engine names podman in the shared schema and messages.
var engine = containerkit.Engine{Name: "podman", Title: "Podman"}

// attributes are the block's own, after the ones every engine has.
var attributes = []sdk.Attribute{
	{Name: "userns", Type: cty.String, Description: `User namespace mode (podman --userns); default "keep-id" when rootless, so files the agent writes belong to you; "" for podman's default.`},
	{Name: "runtime", Type: cty.String, Description: `OCI runtime (podman --runtime), e.g. "runc" where crun cannot run (cgroup v1/hybrid hosts).`},
	{Name: "cgroup_manager", Type: cty.String, Description: `"cgroupfs" or "systemd" (podman --cgroup-manager); "cgroupfs" where systemd is not running.`},
	{Name: "ulimits", Type: cty.Map(cty.String), Description: `Resource limits, name = "soft[:hard]", e.g. { nofile = "1024:1024" } where podman's defaults exceed the host's hard limits.`},
	{Name: "binary", Type: cty.String, Description: "Path to podman; default podman on PATH."},
	{Name: "socket", Type: cty.String, Description: `URL of a podman service (podman system service), e.g. "unix:///run/podman/podman.sock": the podman CLI talks to it (podman --url) instead of running containers itself.`},
}

// config is a decoded, validated provider block.
type config struct {
	containerkit.Config
	UserNS        *string // nil: the default for the mode (keep-id when rootless)
	Runtime       string
	CgroupManager string
	Ulimits       map[string]string
	Binary        string
	Socket        string
}

// rlimits are the names podman --ulimit accepts.
var rlimits = []string{"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}

var ulimitValue = regexp.MustCompile(`^(-1|[0-9]+)(:(-1|[0-9]+))?$`)

// decodeConfig decodes and validates a block. Missing and null attributes
// take their defaults, so partial objects (tests, library use) work.
func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d sandboxkit.Decoder
	v := cfg.Value
	c := config{
		Config:        containerkit.Decode(&d, v),
		Runtime:       d.String(v, "runtime"),
		CgroupManager: d.String(v, "cgroup_manager"),
		Ulimits:       d.StringMap(v, "ulimits"),
		Binary:        d.String(v, "binary"),
		Socket:        d.String(v, "socket"),
	}
	if uv := sandboxkit.Attr(v, "userns"); !uv.IsNull() {
		s := d.String(v, "userns")
		if strings.ContainsAny(s, " \t\n") {
			d.Errorf("userns", "invalid userns", "%q contains whitespace", s)
		}
		c.UserNS = &s
	}
	switch c.CgroupManager {
	case "", "cgroupfs", "systemd":
	default:
		d.Errorf("cgroup_manager", "invalid cgroup_manager", `%q: use "cgroupfs" or "systemd"`, c.CgroupManager)
	}
	if strings.ContainsAny(c.Runtime, " \t\n") {
		d.Errorf("runtime", "invalid runtime", "%q contains whitespace", c.Runtime)
	}
	if c.Socket != "" {
		scheme, rest, _ := strings.Cut(c.Socket, "://")
		if !slices.Contains([]string{"unix", "tcp", "ssh"}, scheme) || rest == "" || strings.ContainsAny(c.Socket, " \t\n") {
			d.Errorf("socket", "invalid socket", `%q: use "unix:///path/podman.sock" (or tcp:// or ssh://, as podman --url)`, c.Socket)
		}
		// The service runs the containers: its own flags choose these.
		for _, av := range [][2]string{{"runtime", c.Runtime}, {"cgroup_manager", c.CgroupManager}} {
			if attr, v := av[0], av[1]; v != "" {
				d.Errorf(attr, attr+" cannot be set with socket",
					"the podman service chooses it: start the service with `podman --%s %s system service`", strings.ReplaceAll(attr, "_", "-"), v)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Ulimits)) {
		if !slices.Contains(rlimits, name) {
			d.Errorf("ulimits", "unknown ulimit", "%q: use one of %s", name, strings.Join(rlimits, ", "))
		} else if !ulimitValue.MatchString(c.Ulimits[name]) {
			d.Errorf("ulimits", "invalid ulimit", `%s = %q: use "soft" or "soft:hard" (numbers, -1 for unlimited)`, name, c.Ulimits[name])
		}
	}
	return c, d.Diags
}

// userns is the --userns value: the configured one, else keep-id when
// podman runs rootless, so that the agent's files in the worktree belong
// to the host user.
func (c config) userns(rootless bool) string {
	if c.UserNS != nil {
		return *c.UserNS
	}
	if rootless {
		return "keep-id"
	}
	return ""
}

// hclString quotes s as an HCL string (for messages that suggest config).
func hclString(s string) string { return fmt.Sprintf("%q", s) }
