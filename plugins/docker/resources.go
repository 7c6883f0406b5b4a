package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/missingstudio/sanddune/sdk"
)

// ListResources lists every container, running or not, labelled with a
// sanddune run id. The daemon is DOCKER_HOST's (no attribute chooses it),
// so the config is not needed.
func (p *Provider) ListResources(ctx context.Context, _ sdk.Config) ([]sdk.Resource, error) {
	cli, err := p.client()
	if err != nil {
		return nil, err
	}
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", sdk.LabelRun))})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]sdk.Resource, 0, len(cs))
	for _, c := range cs {
		out = append(out, sdk.Resource{ID: c.ID, Labels: c.Labels})
	}
	return out, nil
}

// RemoveResource force-removes a container; a missing one is not an error.
func (p *Provider) RemoveResource(ctx context.Context, _ sdk.Config, id string) error {
	cli, err := p.client()
	if err != nil {
		return err
	}
	if err := removeContainer(ctx, cli, id); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}
