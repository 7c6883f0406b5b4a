package configtest

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// agent checks the common attributes.
type agent struct{ agentkit.Base }

func (agent) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	return agentkit.CheckCommon(cfg), nil
}
func (agent) Describe(context.Context, sdk.Config) (sdk.AgentDescription, error) {
	return sdk.AgentDescription{}, nil
}
func (agent) BuildCommand(context.Context, sdk.CommandRequest) (sdk.Command, error) {
	return sdk.Command{}, sdk.ErrNotSupported
}

func TestCheck(t *testing.T) {
	t.Parallel()
	Check(t, agent{agentkit.Base{Name: "echo"}}, []Case{
		{Name: "defaults"},
		{Name: "empty binary and bad env", Attrs: map[string]cty.Value{"binary": cty.StringVal(""), "env": cty.MapVal(map[string]cty.Value{"A B": cty.StringVal("")})}, Want: []string{"binary", "env"}},
	})
}
