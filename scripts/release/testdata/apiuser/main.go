// Command apiuser is what a program using sanddune's Go API looks like: it
// runs one run in a local sandbox with a command agent that commits, on the
// branch given, in the repository given. The release rehearsal builds it
// in a module of its own that requires the published sanddune module.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/plugins/local"
	"github.com/missingstudio/sanddune/sdk"
)

const script = `cat > api.txt && git add api.txt && git -c user.name=api -c user.email=api@sanddune.invalid commit -qm "api: a commit from the Go API" && echo "<promise>COMPLETE</promise>"`

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: apiuser REPO BRANCH")
		os.Exit(2)
	}
	res, err := core.Run(context.Background(), core.RunOptions{
		Name: "api",
		Repo: os.Args[1],
		Sandbox: core.SandboxRef{Address: "sandbox.local.api", Plugin: "local", Provider: local.New(),
			Config: sdk.Config{Value: cty.EmptyObjectVal}},
		Agent: core.AgentRef{Address: "agent.command.api", Plugin: "command", Provider: command.New(),
			Config: sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{
				"command": cty.ListVal([]cty.Value{cty.StringVal("sh"), cty.StringVal("-c"), cty.StringVal(script)}),
				"env":     cty.NullVal(cty.Map(cty.String)),
			})}},
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
