package bubblewrap

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	sandboxtest.Run(t, New(), sandboxtest.Options{})
}
