package sandboxkit

import (
	"os"
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// MergeEnv merges environment layers into a new map; later layers win.
func MergeEnv(layers ...map[string]string) map[string]string {
	env := map[string]string{}
	for _, layer := range layers {
		for k, v := range layer {
			env[k] = v
		}
	}
	return env
}

// EnvList turns env into sorted KEY=value entries, as exec.Cmd and the
// Docker API take them.
func EnvList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}

// HostEnv copies the named variables that are set and not empty in this
// process's environment. A sandbox inherits a chosen few (PATH, locale...),
// never the whole host environment, which may hold credentials.
func HostEnv(keys ...string) map[string]string {
	env := map[string]string{}
	for _, k := range keys {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			env[k] = v
		}
	}
	return env
}

// EnvAttribute is the `env` attribute every sandbox provider declares:
// environment for every command in the sandbox. Describe
// returns it as SandboxDescription.Env, and the host layers it below the
// run's env into CreateRequest.Env; the provider does not apply it again.
func EnvAttribute() sdk.Attribute {
	return sdk.Attribute{Name: "env", Type: cty.Map(cty.String), Description: "Environment for every command in the sandbox (below the run's env)."}
}
