// Command fakeplugin is a test plugin binary. Run as sanddune-plugin-<name>
// (a symlink), it serves a sandbox component called <name>, as a plugin
// binary or as a built-in installed beside sanddune. The name picks its
// behaviour:
//   - "future": speaks plugin protocol 99 only;
//   - "crashy": its sandboxes exit the process in the middle of Exec;
//   - "stuck": its Create writes HostRepoPath/creating and never returns
//     (so the plugin does not stop when asked to);
//   - "builtins": serves two sandboxes, "alpha" and "beta" (a binary
//     serving several built-ins);
//   - anything else: a sandbox whose Exec echoes its argv.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "sanddune-plugin-")
	opts := sdk.ServeOpts{Sandboxes: map[string]sdk.SandboxProvider{name: &provider{name: name}}}
	if name == "builtins" {
		opts.Sandboxes = map[string]sdk.SandboxProvider{"alpha": &provider{name: "alpha"}, "beta": &provider{name: "beta"}}
	}
	if name == "future" {
		// The handshake line of a plugin that picked protocol 99; the host
		// refuses it before connecting.
		fmt.Println("1|99|unix|/nonexistent/plugin.sock|grpc")
		time.Sleep(time.Minute)
		return
	}
	sdk.Serve(opts)
}

type provider struct{ name string }

func (p *provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version: "9.9.9-fake",
		Sandbox: &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated},
	}, nil
}

func (p *provider) ConfigSchema(context.Context) (sdk.Schema, error) { return sdk.Schema{}, nil }
func (p *provider) Configure(context.Context, sdk.Config) (sdk.Diagnostics, error) {
	return nil, nil
}
func (p *provider) Describe(context.Context, sdk.Config) (sdk.SandboxDescription, error) {
	return sdk.SandboxDescription{}, nil
}

func (p *provider) Preflight(context.Context, sdk.PreflightRequest) error { return nil }
func (p *provider) Create(_ context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	if p.name == "stuck" {
		os.WriteFile(filepath.Join(req.HostRepoPath, "creating"), nil, 0o644)
		select {}
	}
	return &sandbox{crashy: p.name == "crashy"}, nil
}

type sandbox struct{ crashy bool }

func (s *sandbox) Info() sdk.SandboxInfo { return sdk.SandboxInfo{ID: "fake", RepoPath: "/fake"} }
func (s *sandbox) Exec(_ context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	if s.crashy {
		os.Exit(3)
	}
	out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(strings.Join(req.Argv, " "))})
	return sdk.ExecResult{}, nil
}
func (s *sandbox) CopyIn(context.Context, string, string) error  { return sdk.ErrNotSupported }
func (s *sandbox) CopyOut(context.Context, string, string) error { return sdk.ErrNotSupported }
func (s *sandbox) Close(context.Context) error                   { return nil }
