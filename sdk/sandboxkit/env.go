package sandboxkit

import (
	"os"
	"sort"
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
