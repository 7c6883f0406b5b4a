package bubblewrap

import (
	"context"
	"fmt"

	"github.com/missingstudio/sanddune/sdk"
)

// ListResources lists sandbox directories left in the temp directory (e.g.
// by a sanddune process that was killed) with their run labels. The ID is
// the directory. No attribute decides where a sandbox lives, so the config
// is not needed.
func (p *Provider) ListResources(context.Context, sdk.Config) ([]sdk.Resource, error) {
	return dirs.List()
}

// RemoveResource removes a sandbox directory listed by ListResources; a
// missing one is not an error.
func (p *Provider) RemoveResource(_ context.Context, _ sdk.Config, id string) error {
	if err := dirs.Remove(id); err != nil {
		return fmt.Errorf("bubblewrap: %w", err)
	}
	return nil
}
