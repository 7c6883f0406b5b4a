package containerkit

import (
	"context"

	"github.com/missingstudio/sanddune/sdk"
)

// Base gives a container-engine provider the sdk.SandboxProvider methods
// every engine has alike: Info (the bind-mount contract, network "none",
// sudo, confinement, mounts), ConfigSchema, Describe (the block's env) and
// Configure. Embed it with every field set.
type Base struct {
	Engine
	Version, Description string
	// TTY: the engine's sandboxes implement sdk.TTYSandbox.
	TTY bool
	// Egress: the engine enforces CreateRequest.Egress (an enforcer
	// sidecar in the sandbox's network namespace).
	Egress bool
	// Attributes are the engine's own, after the shared ones.
	Attributes []sdk.Attribute
	// Decode decodes and validates a whole block: Decode's shared
	// attributes, then the engine's own.
	Decode func(sdk.Config) (Config, sdk.Diagnostics)
}

// Info implements sdk.Provider.
func (b Base) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version:     b.Version,
		Description: b.Description,
		Sandbox: &sdk.SandboxCapabilities{
			Contract:    sdk.ContractBindMount,
			NetworkNone: true,
			Sudo:        true,
			TTY:         b.TTY,
			Confines:    true,
			Egress:      b.Egress,
			Mounts:      true,
		},
	}, nil
}

// ConfigSchema implements sdk.Provider: Engine.Schema with Attributes.
func (b Base) ConfigSchema(context.Context) (sdk.Schema, error) {
	return b.Schema(b.Attributes...), nil
}

// Describe returns the block's env (the sandbox-provider env layer) and
// the networks an egress policy cannot confine.
func (b Base) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	c, diags := b.Decode(cfg)
	return sdk.SandboxDescription{Env: c.Env, EgressConflicts: sharedNetworks(c.Networks, "network")}, diags.Err()
}

// Configure implements sdk.Provider: the block's diagnostics.
func (b Base) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	_, diags := b.Decode(cfg)
	return diags, nil
}
