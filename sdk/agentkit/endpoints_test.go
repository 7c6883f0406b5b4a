package agentkit

import (
	"slices"
	"testing"
)

// TestEndpoints: a base URL names the one endpoint, with its scheme's
// port; else a provider/model id names its provider's API; else the
// agent's defaults.
func TestEndpoints(t *testing.T) {
	for _, c := range []struct {
		base, model string
		want        []string
	}{
		{"", "", []string{"default.test"}},
		{"https://gw.example/v1", "anthropic/claude", []string{"gw.example:443"}},
		{"http://10.0.0.5/v1", "", []string{"10.0.0.5:80"}},
		{"http://[fd00::1]:8080/v1", "", []string{"[fd00::1]:8080"}},
		{"", "openai/gpt-5", []string{"api.openai.com"}},
		{"", "unknown/x", []string{"default.test"}},
		{"", "bare-model", []string{"default.test"}},
	} {
		if got := Endpoints(c.base, c.model, "default.test"); !slices.Equal(got, c.want) {
			t.Errorf("Endpoints(%q, %q) = %v, want %v", c.base, c.model, got, c.want)
		}
	}
}
