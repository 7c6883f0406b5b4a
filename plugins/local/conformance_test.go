package local_test

import (
	"testing"

	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, local.New(), sandboxtest.Options{})
}
