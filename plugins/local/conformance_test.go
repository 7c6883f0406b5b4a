package local_test

import (
	"testing"

	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	sandboxtest.Run(t, local.New(), sandboxtest.Options{})
}
