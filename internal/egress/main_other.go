//go:build !linux

package egress

import (
	"encoding/json"
	"io"
)

// Main runs the enforcer; it needs Linux's nftables.
func Main(_ []string, stdout io.Writer) int {
	_ = json.NewEncoder(stdout).Encode(map[string]string{"error": "the egress enforcer runs on Linux only"})
	return 1
}
