package containerkit

import (
	"github.com/docker/go-units"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// minMemory is the smallest memory limit the OCI runtimes accept.
const minMemory = 6 * 1024 * 1024

// Limits are a container's resource limits; zero means none.
type Limits struct {
	CPUs      float64
	Memory    int64
	PidsLimit int64
}

// DecodeLimits decodes the `cpus`, `memory` ("512m", "2g") and `pids_limit`
// attributes.
func DecodeLimits(d *sandboxkit.Decoder, v cty.Value) Limits {
	var l Limits
	if f, ok := d.Number(v, "cpus"); ok {
		l.CPUs, _ = f.Float64()
		if l.CPUs <= 0 {
			d.Errorf("cpus", "cpus must be greater than 0", "")
		}
	}
	if s := d.String(v, "memory"); s != "" {
		n, err := units.RAMInBytes(s)
		switch {
		case err != nil:
			d.Errorf("memory", "invalid memory size", `%q: use a number with a unit, e.g. "512m" or "2g"`, s)
		case n < minMemory:
			d.Errorf("memory", "memory limit too small", "the container runtime needs at least 6m, got %q", s)
		}
		l.Memory = n
	}
	if n, ok := d.Int(v, "pids_limit"); ok {
		if n <= 0 {
			d.Errorf("pids_limit", "pids_limit must be greater than 0", "")
		}
		l.PidsLimit = n
	}
	return l
}
