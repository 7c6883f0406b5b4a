// Command apiuser is what a program using sanddune's Go API looks like: it
// runs one run in a local sandbox with a command agent that commits, on the
// branch given, in the repository given. The release rehearsal builds it
// in a module of its own that requires the published sanddune module.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/plugins/local"
)

const script = `cat > api.txt && git add api.txt && git -c user.name=api -c user.email=api@sanddune.invalid commit -qm "api: a commit from the Go API" && echo "<promise>COMPLETE</promise>"`

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: apiuser REPO BRANCH")
		os.Exit(2)
	}
	ctx := context.Background()
	sbCfg, diags := core.ProviderConfig(ctx, local.New(), "sandbox.local.api", ``)
	agCfg, more := core.ProviderConfig(ctx, command.New(), "agent.command.api", "command = [\"sh\", \"-c\", "+strconv.Quote(script)+"]")
	if diags = append(diags, more...); diags.HasErrors() {
		fmt.Fprintln(os.Stderr, "apiuser:", diags)
		os.Exit(1)
	}
	res, err := core.Run(ctx, core.RunOptions{
		Name:           "api",
		Repo:           os.Args[1],
		Sandbox:        core.SandboxRef{Address: "sandbox.local.api", Plugin: "local", Provider: local.New(), Config: sbCfg},
		Agent:          core.AgentRef{Address: "agent.command.api", Plugin: "command", Provider: command.New(), Config: agCfg},
		Prompt:         "a note from the Go API",
		BranchStrategy: core.BranchStrategy{Type: core.StrategyBranch, Branch: os.Args[2]},
		MaxIterations:  1,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "apiuser:", err)
		os.Exit(1)
	}
	if len(res.Commits) != 1 {
		fmt.Fprintf(os.Stderr, "apiuser: %d commits, want 1\n", len(res.Commits))
		os.Exit(1)
	}
	fmt.Println(res.Commits[0].SHA)
}
