package claude

import (
	"context"

	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// EncodeCwd implements sdk.CwdEncoder: Claude Code names a session's
// project directory after its cwd.
func (provider) EncodeCwd(_ context.Context, cwd string) (string, error) {
	return agentkit.EncodeClaudeCwd(cwd), nil
}
