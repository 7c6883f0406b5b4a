package podman

import (
	"context"
	"errors"
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
)

// ListResources lists every container, running or not, labelled with a
// sanddune run id. gc has no provider block: it uses podman from PATH, and
// where podman is not installed no run can have left a container.
func (p *Provider) ListResources(ctx context.Context) ([]sdk.Resource, error) {
	c, err := newCLI(config{})
	if errors.Is(err, errNotInstalled) {
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
func (p *Provider) RemoveResource(ctx context.Context, id string) error {
	c, err := newCLI(config{})
	if err != nil {
		return err
	}
	if err := removeContainer(ctx, c, id); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}
