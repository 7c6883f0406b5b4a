package sandboxtest_test

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/internal/fake"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestFakeIsolated(t *testing.T) {
	t.Parallel()
	sandboxtest.Run(t, &fake.SandboxProvider{Contract: sdk.ContractIsolated}, sandboxtest.Options{})
}

func TestFakeBindMount(t *testing.T) {
	t.Parallel()
	sandboxtest.Run(t, &fake.SandboxProvider{Contract: sdk.ContractBindMount}, sandboxtest.Options{})
}
