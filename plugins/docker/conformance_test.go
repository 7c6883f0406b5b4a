package docker

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	sandboxtest.Run(t, New(), sandboxtest.Options{
		Config: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(testImage())}),
	})
}
