package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// goEnv is the environment of a dependent outside the repository: no
// workspace, the sanddune modules from the file proxy at proxy (then the
// developer's module cache, then the usual proxy) with no checksum
// database lookup for them, and a module cache of its own under scratch so
// nothing of the rehearsal reaches the developer's.
func goEnv(scratch, proxy string) ([]string, error) {
	usual, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOPROXY: %v", err)
	}
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMODCACHE: %v", err)
	}
	set := map[string]string{
		"GOPROXY":     "file://" + proxy + ",file://" + filepath.Join(strings.TrimSpace(string(cache)), "cache", "download") + "," + strings.TrimSpace(string(usual)),
		"GONOSUMDB":   rootPath,
		"GOPRIVATE":   "",
		"GONOPROXY":   "",
		"GOWORK":      "off",
		"GOMODCACHE":  filepath.Join(scratch, "modcache"),
		"GOBIN":       filepath.Join(scratch, "bin"),
		"GOFLAGS":     "-modcacherw -trimpath", // -trimpath: build cache hits across scratch module caches
		"GOTOOLCHAIN": "local",
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env, nil
}

// run runs name args in dir with env and returns its combined output,
// which an error carries too.
func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
	return out.String(), nil
}
