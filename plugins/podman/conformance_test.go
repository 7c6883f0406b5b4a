package podman

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	sandboxtest.Run(t, New(), sandboxtest.Options{Config: cfgOf(t, nil).Value})
}
