package podman

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Within one sanddune process the host asks each block's preflight once;
// across processes, a test container that started is remembered
// in the user's cache directory (preflightCache), one empty file per shape,
// named by a hash of everything the test's outcome depends on (passedKey);
// nothing is written in the user's repository. A podman service (socket) is
// never remembered: its runtime and configuration are not visible here.
// Create removes them all when a container does not start. The cache
// stays: without it every sanddune run with podman would start a test
// container (a podman run) before its sandbox.

// preflightCache is where the shapes that passed are remembered:
// <user cache dir>/sanddune/podman-preflight, or "" when the user has no
// cache directory.
func preflightCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "sanddune", "podman-preflight")
}

// passedKey hashes what a test container's outcome depends on: the podman
// binary and its version, the global and container flags, the image (by
// id), the user and namespace mode, this process's resource limits (which
// podman's runtime inherits), the boot, the OCI runtimes installed, and
// podman's configuration files (containers.conf, storage.conf, seccomp)
// with their drop-in dirs. A change to any of them makes a new key. It
// returns "" when the outcome cannot be keyed (a service).
func passedKey(c cli, args []string, imageID, version string) string {
	if c.socket != "" || imageID == "" {
		return ""
	}
	h := sha256.New()
	line := func(parts ...any) { fmt.Fprintln(h, parts...) }
	line("podman preflight", Version, version, imageID)
	line(strings.Join(c.argv(args...), "\x00"))
	for _, name := range []string{"CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "HOME"} {
		line(name, os.Getenv(name))
	}
	for _, r := range []int{syscall.RLIMIT_NOFILE, 6 /* RLIMIT_NPROC */} {
		var lim syscall.Rlimit
		_ = syscall.Getrlimit(r, &lim)
		line("rlimit", r, lim.Cur, lim.Max)
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	line("boot", strings.TrimSpace(string(boot)))
	files := []string{c.bin, "/etc/subuid", "/etc/subgid"}
	for _, rt := range []string{"crun", "runc", "crun-wasm", "kata-runtime", "runsc", "youki", "krun"} {
		if p, err := exec.LookPath(rt); err == nil {
			files = append(files, p)
		}
	}
	user := os.Getenv("XDG_CONFIG_HOME")
	if home, err := os.UserHomeDir(); user == "" && err == nil {
		user = filepath.Join(home, ".config")
	}
	for _, dir := range []string{"/usr/share/containers", "/etc/containers", filepath.Join(user, "containers")} {
		files = append(files, filepath.Join(dir, "containers.conf"), filepath.Join(dir, "storage.conf"), filepath.Join(dir, "seccomp.json"))
		dropins, _ := filepath.Glob(filepath.Join(dir, "containers.conf.d", "*"))
		files = append(files, filepath.Join(dir, "containers.conf.d"))
		files = append(files, dropins...)
	}
	files = append(files, os.Getenv("CONTAINERS_CONF"), os.Getenv("CONTAINERS_STORAGE_CONF"))
	for _, f := range files {
		if f == "" {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			line(f, "-")
			continue
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		line(f, fi.Size(), fi.ModTime().UnixNano(), ino)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// passed reports whether the shape with key passed before, and with which
// adjustment (nil: as it is).
func passed(cache, key string) (*adjustment, bool) {
	if key == "" || cache == "" {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(cache, key))
	if err != nil {
		return nil, false
	}
	if len(b) == 0 {
		return nil, true
	}
	var a adjustment
	if json.Unmarshal(b, &a) != nil {
		return nil, false // test again
	}
	return &a, true
}

// rememberPassed records that the shape with key passed, with adj (nil: as
// it is). It is a cache: when the directory cannot be written, the next
// preflight tests again.
func rememberPassed(cache, key string, adj *adjustment) {
	if key == "" || cache == "" || os.MkdirAll(cache, 0o700) != nil {
		return
	}
	var b []byte
	if adj != nil {
		b, _ = json.Marshal(adj)
	}
	_ = os.WriteFile(filepath.Join(cache, key), b, 0o600)
}

// forgetPassed forgets every shape that passed: a container did not start
// although its preflight had passed, so the next preflight tests again and
// names what to change.
func forgetPassed(cache string) {
	if cache != "" {
		_ = os.RemoveAll(cache)
	}
}
