package bubblewrap

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// ListResources lists sandbox directories left in the temp directory (e.g.
// by a sanddune process that was killed) with their run labels. The ID is
// the directory.
func (p *Provider) ListResources(ctx context.Context) ([]sdk.Resource, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var out []sdk.Resource
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "labels.json"))
		if err != nil {
			continue
		}
		labels := map[string]string{}
		if json.Unmarshal(b, &labels) != nil || labels[sdk.LabelRun] == "" {
			continue
		}
		out = append(out, sdk.Resource{ID: d, Labels: labels})
	}
	return out, nil
}

// RemoveResource removes a sandbox directory listed by ListResources; a
// missing one is not an error.
func (p *Provider) RemoveResource(ctx context.Context, id string) error {
	clean := filepath.Clean(id)
	if filepath.Dir(clean) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(clean), dirPrefix) {
		return fmt.Errorf("%q is not a bubblewrap sandbox directory", id)
	}
	if _, err := os.Lstat(filepath.Join(clean, "labels.json")); os.IsNotExist(err) {
		if _, err := os.Lstat(clean); os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("%q is not a bubblewrap sandbox directory", id)
	}
	return removeAll(clean)
}
