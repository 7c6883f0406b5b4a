package agentcheck

import (
	"context"
	"reflect"
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
func (a agent) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	return sdk.AgentDescription{Env: a.Common(cfg).Env}, nil
}
func (agent) BuildCommand(context.Context, sdk.CommandRequest) (sdk.Command, error) {
	return sdk.Command{}, sdk.ErrNotSupported
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	Configure(t, agent{agentkit.Base{Name: "echo"}}, []Case{
		{Name: "defaults"},
		{Name: "empty binary and bad env", Attrs: map[string]cty.Value{"binary": cty.StringVal(""), "env": cty.MapVal(map[string]cty.Value{"A B": cty.StringVal("")})}, Want: []string{"binary", "env"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	env := map[string]cty.Value{"K": cty.StringVal("v")}
	if d := Describe(t, agent{agentkit.Base{Name: "echo"}}, map[string]cty.Value{"env": cty.MapVal(env)}); !reflect.DeepEqual(d.Env, map[string]string{"K": "v"}) {
		t.Errorf("Describe = %+v", d)
	}
}
