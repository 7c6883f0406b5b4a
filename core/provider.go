package core

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/sdk"
)

// ProviderConfig returns the config of a provider block written in Go: body
// is the block's body as HCL text (what goes inside `sandbox "docker" "d"
// { ... }`), address the block's address ("sandbox.docker.d"). It is
// decoded through p's own schema (defaults filled in) and checked by p,
// with the diagnostics the CLI reports for the same block in a file.
func ProviderConfig(ctx context.Context, p sdk.Provider, address, body string) (sdk.Config, Diagnostics) {
	return providerConfig(ctx, p, address, []byte(body), address+".hcl")
}

// ProviderConfigFromMap is ProviderConfig with the block's attributes as a
// map (nested blocks as maps or lists of maps), as in the block's JSON form.
func ProviderConfigFromMap(ctx context.Context, p sdk.Provider, address string, attrs map[string]any) (sdk.Config, Diagnostics) {
	src, err := json.Marshal(attrs)
	if err != nil {
		return sdk.Config{}, Diagnostics{{Severity: Error, Block: address, Summary: "Invalid provider attributes", Detail: err.Error(), Err: err}}
	}
	return providerConfig(ctx, p, address, src, address+".json")
}

func providerConfig(ctx context.Context, p sdk.Provider, address string, src []byte, filename string) (sdk.Config, Diagnostics) {
	parts := strings.SplitN(address, ".", 3)
	if len(parts) != 3 || (parts[0] != string(sdk.KindSandbox) && parts[0] != string(sdk.KindAgent)) {
		return sdk.Config{}, Diagnostics{{Severity: Error, Block: address, Summary: "Invalid provider address",
			Detail: `a provider block's address is "sandbox.<plugin>.<name>" or "agent.<plugin>.<name>", got "` + address + `"`}}
	}
	f, b, hd := config.ParseProviderBody(sdk.Kind(parts[0]), parts[1], parts[2], src, filename)
	if ds := config.FromHCL(address, hd); ds.HasErrors() {
		return sdk.Config{}, ds
	}
	return planning.Decode(ctx, f, b, p, parts[1])
}
