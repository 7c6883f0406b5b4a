package docker

import (
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// engine names docker in the shared schema and messages.
var engine = containerkit.Engine{Name: "docker", Title: "Docker"}

// attributes are the block's own, after the ones every engine has.
var attributes = []sdk.Attribute{
	{Name: "groups", Type: cty.List(cty.String), Description: "Supplementary groups (names or numeric GIDs) for the container user."},
	{Name: "container_uid", Type: cty.Number, Description: "UID the container runs as; default the host UID."},
	{Name: "container_gid", Type: cty.Number, Description: "GID the container runs as; default the host GID."},
}

// config is a decoded, validated provider block.
type config struct {
	containerkit.Config
	Groups   []string
	UID, GID *int
}

// decodeConfig decodes and validates a block. Missing and null attributes
// take their defaults, so partial objects (tests, library use) work.
func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d sandboxkit.Decoder
	v := cfg.Value
	c := config{Config: containerkit.Decode(&d, v), Groups: d.StringList(v, "groups")}
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
	return c, d.Diags
}
