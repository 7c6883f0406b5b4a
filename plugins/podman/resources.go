package podman

import (
	"context"
	"errors"
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
)

// ListResources lists every container, running or not, labelled with a
// sanddune run id, through the block's podman (binary) and service
// (socket). With the defaults it uses podman from PATH, and where podman
// is not installed no run can have left a container.
func (p *Provider) ListResources(ctx context.Context, cfg sdk.Config) ([]sdk.Resource, error) {
	c, err := resourceCLI(cfg)
	if cfg.IsNull() && errors.Is(err, errNotInstalled) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []sdk.Resource // podman's Id and Labels
	if err := c.runJSON(ctx, &out, "ps", "--all", "--filter", "label="+sdk.LabelRun, "--format", "json"); err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return out, nil
}

// RemoveResource force-removes a container; a missing one is not an error.
func (p *Provider) RemoveResource(ctx context.Context, cfg sdk.Config, id string) error {
	c, err := resourceCLI(cfg)
	if err != nil {
		return err
	}
	if err := removeContainer(ctx, c, id); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// resourceCLI is the podman CLI of a block's config, or the default one.
func resourceCLI(cfg sdk.Config) (cli, error) {
	if cfg.IsNull() {
		return newCLI(config{})
	}
	c, diags := decodeConfig(cfg)
	if diags.HasErrors() {
		return cli{}, fmt.Errorf("podman: invalid config: %w", diags)
	}
	return newCLI(c)
}
