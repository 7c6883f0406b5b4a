package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/plugins/vercel/vercelfake"
	"github.com/missingstudio/sanddune/sdk/agenttest"
	"github.com/missingstudio/sanddune/sdk/plugintest"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// builtinsPath is sanddune as TestMain built it, under the name it serves
// its built-ins as (a symlink, so that the kits, which start a binary
// with its path as argv[0], start it as the plugin host does).
func builtinsPath(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), builtinsBinary)
	if err := os.Symlink(sanddune, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBuiltinsBinaryServesTheBuiltins: sanddune, run as
// sanddune-plugin-builtins, serves through real gRPC exactly the built-ins
// builtins.go maps to it.
func TestBuiltinsBinaryServesTheBuiltins(t *testing.T) {
	t.Parallel()
	sandboxes, agents := plugintest.Binary(t, builtinsPath(t))
	got := slices.Sorted(maps.Keys(sandboxes))
	got = slices.Sorted(slices.Values(append(got, slices.Collect(maps.Keys(agents))...)))
	var want []string
	for name, bin := range builtins {
		if bin == builtinsBinary {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s serves %v, but builtins.go maps %v to it: a provider is a built-in when both name it", builtinsBinary, got, want)
	}
}

// TestBuiltinsBinaryConformance runs the conformance kits against every
// component sanddune serves as sanddune-plugin-builtins, each started as
// the plugin host starts it (handshake, AutoMTLS, real gRPC): the daemonless ones here, the
// engines' where the engine (and the test image) are here, each in a test
// of its own (TestBuiltinsBinaryConformancePodman, …: top-level parallel
// tests start among the package's others, where subtests start after all
// of them, so their kits, serial inside, no longer end the package alone).
// An agent's kit runs with an empty block unless agentConfigs says
// otherwise; vercel's needs its fake API and credentials in the
// environment (TestBuiltinsBinaryConformanceVercel).
func TestBuiltinsBinaryConformance(t *testing.T) {
	t.Parallel()
	bin := builtinsPath(t)
	served, agents := plugintest.Binary(t, bin)
	sandboxes := map[string]func(*testing.T) sandboxtest.Options{
		"local":  func(*testing.T) sandboxtest.Options { return sandboxtest.Options{} },
		"podman": nil, "docker": nil, "bubblewrap": nil, "vercel": nil, // tests of their own
	}
	agentConfigs := map[string]cty.Value{
		"command": cty.ObjectVal(map[string]cty.Value{
			"command": cty.ListVal([]cty.Value{cty.StringVal("sh"), cty.StringVal("-c"), cty.StringVal("cat")}),
		}),
		"opencode": cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")}),
		"pi":       cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}),
	}
	for name := range served {
		opts, ok := sandboxes[name]
		if !ok {
			t.Errorf("sandbox %q: say how its kit runs here", name)
			continue
		}
		if opts == nil {
			continue
		}
		t.Run("sandbox/"+name, func(t *testing.T) {
			t.Parallel()
			sandboxtest.RunBinary(t, bin, name, opts(t))
		})
	}
	for name := range agents {
		cfg, ok := agentConfigs[name]
		if !ok {
			cfg = cty.NilVal
		}
		t.Run("agent/"+name, func(t *testing.T) {
			t.Parallel()
			agenttest.RunBinary(t, bin, name, cfg)
		})
	}
}

// TestBuiltinsBinaryConformancePodman: the sandbox kit against the podman
// component sanddune serves (TestBuiltinsBinaryConformance).
func TestBuiltinsBinaryConformancePodman(t *testing.T) {
	t.Parallel()
	// The kit creates without the preflight that lowers podman's nofile
	// and nproc limits under this host's hard limits when they exceed
	// them: set them low.
	body := requirePodman(t) + `ulimits = { nofile = "1024:1024", nproc = "1024:1024" }` + "\n"
	sandboxtest.RunBinary(t, builtinsPath(t), "podman", sandboxtest.Options{Config: blockValue(t, body)})
}

// TestBuiltinsBinaryConformanceDocker: the sandbox kit against the docker
// component (TestBuiltinsBinaryConformance).
func TestBuiltinsBinaryConformanceDocker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	sandboxtest.RunBinary(t, builtinsPath(t), "docker", sandboxtest.Options{Config: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(testImage())})})
}

// TestBuiltinsBinaryConformanceBubblewrap: the sandbox kit against the
// bubblewrap component (TestBuiltinsBinaryConformance).
func TestBuiltinsBinaryConformanceBubblewrap(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	sandboxtest.RunBinary(t, builtinsPath(t), "bubblewrap", sandboxtest.Options{})
}

// TestBuiltinsBinaryConformanceVercel runs the sandbox kit against the
// vercel component sanddune serves and the fake Vercel API,
// with the credentials the plugin reads from its environment (so not in
// parallel).
func TestBuiltinsBinaryConformanceVercel(t *testing.T) {
	kittest.RequireEngine(t, "bubblewrap (the fake Vercel API runs commands with it)", vercelfake.Available())
	srv, err := vercelfake.New(vercelfake.Options{Token: "tok-kit", TeamID: "team_kit"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for k, v := range map[string]string{"VERCEL_TOKEN": "tok-kit", "VERCEL_TEAM_ID": "team_kit", "VERCEL_PROJECT_ID": "prj_kit", "VERCEL_OIDC_TOKEN": ""} {
		t.Setenv(k, v)
	}
	sandboxtest.RunBinary(t, builtinsPath(t), "vercel", sandboxtest.Options{
		Config:          cty.ObjectVal(map[string]cty.Value{"base_url": cty.StringVal(srv.URL)}),
		SkipNetworkNone: "the fake Vercel API does not enforce network policies; Vercel's own microVMs do",
	})
}

// blockValue evaluates the attributes of an HCL block body (constants;
// an object as a map of strings, such as podman's ulimits) into the
// object value a provider receives.
func blockValue(t *testing.T, body string) cty.Value {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(body), "block.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", body, diags)
	}
	attrs := map[string]cty.Value{}
	for name, a := range f.Body.(*hclsyntax.Body).Attributes {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", body, diags)
		}
		if v.Type().IsObjectType() && v.LengthInt() > 0 {
			v = cty.MapVal(v.AsValueMap())
		}
		attrs[name] = v
	}
	return cty.ObjectVal(attrs)
}
