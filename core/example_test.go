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

// A sandbox kept open across runs, as a session's steps use it: each run
// has its own prompt and agent, and finds what the one before left.
func ExampleCreateSandbox() {
	ctx := context.Background()
	repo := exampleRepo()
	defer os.RemoveAll(repo)
	sbCfg, _ := core.ProviderConfig(ctx, local.New(), "sandbox.local.dev", ``)
	agCfg, diags := core.ProviderConfig(ctx, command.New(), "agent.command.step", `
command = ["sh", "-c", "cat >> steps.txt && git add steps.txt && git -c user.name=a -c user.email=a@example.com commit -qm \"$(tail -1 steps.txt)\" && echo '<promise>COMPLETE</promise>'"]
`)
	if diags.HasErrors() {
		fmt.Println(diags)
		return
	}
	agent := core.AgentRef{Address: "agent.command.step", Plugin: "command", Provider: command.New(), Config: agCfg}
	sb, err := core.CreateSandbox(ctx, core.RunOptions{Name: "pair", Repo: repo, Logging: core.Logging{Mode: core.LogFile, Path: os.DevNull},
		BranchStrategy: core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/pair"},
		Sandbox:        core.SandboxRef{Address: "sandbox.local.dev", Plugin: "local", Provider: local.New(), Config: sbCfg},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sb.Close(ctx) // removes the sandbox and the (clean) worktree
	for _, prompt := range []string{"implement", "review"} {
		res, err := sb.Run(ctx, core.RunOptions{Agent: agent, Prompt: prompt})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d commit(s) on %s\n", prompt, len(res.Commits), res.Branch)
	}
	// Output:
	// implement: 1 commit(s) on agent/pair
	// review: 1 commit(s) on agent/pair
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
