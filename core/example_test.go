package core_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/plugins/command"
	"github.com/missingstudio/sanddune/plugins/local"
)

// A run built in Go: the providers' blocks are given as HCL text, decoded
// through each provider's own schema (ProviderConfig), and the run lands
// the agent's commit on its branch.
func ExampleRun() {
	ctx := context.Background()
	repo := exampleRepo()
	defer os.RemoveAll(repo)

	sbCfg, diags := core.ProviderConfig(ctx, local.New(), "sandbox.local.dev", ``)
	if diags.HasErrors() {
		fmt.Println(diags)
		return
	}
	agCfg, diags := core.ProviderConfig(ctx, command.New(), "agent.command.scripted", `
command = ["sh", "-c", "cat > note.txt && git add note.txt && git -c user.name=a -c user.email=a@example.com commit -qm note && echo '<promise>COMPLETE</promise>'"]
`)
	if diags.HasErrors() {
		fmt.Println(diags)
		return
	}
	res, err := core.Run(ctx, core.RunOptions{
		Name:           "note",
		Repo:           repo,
		Sandbox:        core.SandboxRef{Address: "sandbox.local.dev", Plugin: "local", Provider: local.New(), Config: sbCfg},
		Agent:          core.AgentRef{Address: "agent.command.scripted", Plugin: "command", Provider: command.New(), Config: agCfg},
		Prompt:         "a note from Go",
		BranchStrategy: core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/note"},
		Logging:        core.Logging{Mode: core.LogFile, Path: os.DevNull},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d commit(s) on %s, signal %s\n", len(res.Commits), res.Branch, res.CompletionSignal)
	// Output: 1 commit(s) on agent/note, signal <promise>COMPLETE</promise>
}

// A provider block's mistakes are the diagnostics the CLI reports, at the
// attribute.
func ExampleProviderConfigFromMap() {
	_, diags := core.ProviderConfigFromMap(context.Background(), command.New(), "agent.command.a",
		map[string]any{"command": []string{}})
	for _, d := range diags {
		fmt.Printf("%s: %s\n", d.Attribute, d.Summary)
	}
	// Output: command: Empty command
}

// exampleRepo is a new git repository with one commit.
func exampleRepo() string {
	dir, err := os.MkdirTemp("", "sanddune-example-")
	if err != nil {
		panic(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=a", "-c", "user.email=a@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			panic(string(out))
		}
	}
	return dir
}
