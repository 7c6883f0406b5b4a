package docker

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// TestConformance is not parallel: the egress check needs the enforcer on
// PATH.
func TestConformance(t *testing.T) {
	requireDocker(t)
	containerkittest.EnforcerOnPath(t)
	sandboxtest.Run(t, New(), sandboxtest.Options{
		Config: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(testImage())}),
	})
}
