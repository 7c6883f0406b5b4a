package containerkit

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Networks decodes a `network` attribute: a name or a list of names;
// "none" cuts the container off the network and combines with nothing.
func Networks(d *sandboxkit.Decoder, v cty.Value, name string) []string {
	var ns []string
	switch nv := sandboxkit.Attr(v, name); {
	case nv.IsNull():
	case nv.Type() == cty.String:
		ns = []string{nv.AsString()}
	default:
		ns = d.StringList(v, name)
	}
	for _, n := range ns {
		if strings.TrimSpace(n) == "" {
			d.Errorf(name, "empty network name", "")
		}
		if n == "none" && len(ns) > 1 {
			d.Errorf(name, `"none" cannot be combined with other networks`, "")
		}
	}
	return ns
}

// sharedNetworks are the diagnostics of networks that are another's
// namespace (the host's, another container's, a given path's): the
// enforcer would confine that one too, so egress refuses them.
func sharedNetworks(networks []string, name string) sdk.Diagnostics {
	var ds sdk.Diagnostics
	for _, n := range networks {
		if n == "host" || strings.HasPrefix(n, "container:") || strings.HasPrefix(n, "ns:") {
			ds = append(ds, sdk.Diagnostic{Attribute: name, Summary: fmt.Sprintf("egress with network = %q", n),
				Detail: fmt.Sprintf("network %q shares a network namespace that is not the sandbox's own, and an egress policy would confine it too: "+
					"remove the network attribute (the engine's default network) or use a network of its own (a named one)", n)})
		}
	}
	return ds
}

// Device is a host device made available in the container.
type Device struct {
	HostPath, ContainerPath, Permissions string
}

var devicePerms = regexp.MustCompile(`^[rwm]{1,3}$`)

// Devices decodes a `devices` attribute: host[:container[:permissions]].
func Devices(d *sandboxkit.Decoder, v cty.Value, name string) []Device {
	var out []Device
	for i, spec := range d.StringList(v, name) {
		dev, err := ParseDevice(spec)
		if err != nil {
			d.Errorf(fmt.Sprintf("%s.%d", name, i), "invalid device", "%v", err)
			continue
		}
		out = append(out, dev)
	}
	return out
}

// ParseDevice parses host[:container[:permissions]] (as docker --device).
func ParseDevice(spec string) (Device, error) {
	parts := strings.Split(spec, ":")
	if len(parts) > 3 || parts[0] == "" {
		return Device{}, fmt.Errorf("%q: want host[:container[:permissions]]", spec)
	}
	dev := Device{HostPath: parts[0], ContainerPath: parts[0], Permissions: "rwm"}
	if len(parts) == 2 && devicePerms.MatchString(parts[1]) {
		dev.Permissions = parts[1]
	} else if len(parts) >= 2 {
		dev.ContainerPath = parts[1]
	}
	if len(parts) == 3 {
		if !devicePerms.MatchString(parts[2]) {
			return Device{}, fmt.Errorf("%q: permissions must be a combination of r, w and m", spec)
		}
		dev.Permissions = parts[2]
	}
	if !path.IsAbs(dev.HostPath) || !path.IsAbs(dev.ContainerPath) {
		return Device{}, fmt.Errorf("%q: device paths must be absolute", spec)
	}
	return dev, nil
}

// SELinux relabel options for bind mounts.
const (
	LabelNone    = ""
	LabelShared  = "z" // the content may be shared by several containers
	LabelPrivate = "Z" // private to this container
)

// SELinuxLabel decodes a `selinux_label` attribute: "z", "Z" or false.
// Unset means "z" when SELinux is enforcing on this host, else none.
func SELinuxLabel(d *sandboxkit.Decoder, v cty.Value, name string) string {
	lv := sandboxkit.Attr(v, name)
	switch {
	case lv.IsNull():
		if SELinuxEnforcing() {
			return LabelShared
		}
		return LabelNone
	case lv.Type() == cty.Bool:
		if lv.True() {
			d.Errorf(name, "invalid selinux_label", `use "z" (shared), "Z" (private) or false`)
		}
		return LabelNone
	case lv.Type() == cty.String && (lv.AsString() == LabelShared || lv.AsString() == LabelPrivate):
		return lv.AsString()
	}
	d.Errorf(name, "invalid selinux_label", `use "z" (shared), "Z" (private) or false`)
	return LabelNone
}

// SELinuxEnforcing reports whether SELinux is enforcing on this host.
func SELinuxEnforcing() bool {
	b, err := os.ReadFile("/sys/fs/selinux/enforce")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// Relabel is the relabel option for one bind under the configured label:
// the shared git metadata never gets a private label, which would lock the
// repository's other runs (and the host) out of it.
func (b Bind) Relabel(label string) string {
	if label == LabelPrivate && b.Git {
		return LabelShared
	}
	return label
}
