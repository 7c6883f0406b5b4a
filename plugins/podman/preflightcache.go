package podman

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// A test container that started is remembered across sanddune processes
// in the repo's state dir, <repo>/.sanddune/cache/podman-preflight (git
// ignores it), one empty file per shape, named by a hash of everything the
// test's outcome depends on (passedKey). A podman service (socket) is
// never remembered: its runtime and configuration are not visible here.
// Create removes them all when a container does not start.

// passedDir is where the shapes that passed are remembered for a repo.
func passedDir(hostRepo string) string {
	return filepath.Join(hostRepo, sandboxkit.StateDirName, "cache", "podman-preflight")
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

// passed reports whether the shape with key passed before.
func passed(hostRepo, key string) bool {
	if key == "" || hostRepo == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(passedDir(hostRepo), key))
	return err == nil
}

// rememberPassed records that the shape with key passed. It is a cache:
// when the state dir cannot be written, the next preflight tests again.
func rememberPassed(hostRepo, key string) {
	if key == "" || hostRepo == "" {
		return
	}
	dir := passedDir(hostRepo)
	if sandboxkit.EnsureIgnoredDir(filepath.Dir(dir)) != nil || os.MkdirAll(dir, 0o755) != nil {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, key), nil, 0o644)
}

// forgetPassed forgets every shape that passed for a repo: a container did
// not start although its preflight had passed, so the next preflight tests
// again and names what to change.
func forgetPassed(hostRepo string) {
	if hostRepo != "" {
		_ = os.RemoveAll(passedDir(hostRepo))
	}
}
