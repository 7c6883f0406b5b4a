package podman

import (
	"testing"

	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// TestConformance is not parallel: the egress check needs the enforcer on
// PATH.
func TestConformance(t *testing.T) {
	containerkittest.EnforcerOnPath(t)
	sandboxtest.Run(t, New(), sandboxtest.Options{Config: cfgOf(t, nil).Value})
}
