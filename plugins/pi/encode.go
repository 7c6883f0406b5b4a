package pi

import (
	"context"

	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// EncodeCwd implements sdk.CwdEncoder: pi names a session's directory
// after its cwd.
func (provider) EncodeCwd(_ context.Context, cwd string) (string, error) {
	return agentkit.EncodePiCwd(cwd), nil
}
