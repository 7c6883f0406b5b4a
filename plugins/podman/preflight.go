package podman

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
)

// minVersion is the oldest podman the plugin supports (Debian bookworm
// ships 4.3).
var minVersion = [2]int{4, 0}

// Preflight checks, pass or fail, that a container can be created with this
// config: podman is installed and recent enough, rootless podman has its
// subordinate ids and newuidmap, the image exists and fits the UID the
// container runs as, networks, devices and mounts exist, and a test
// container starts with the configured runtime, cgroup manager, ulimits,
// limits and user namespace. When it does not, Preflight tries the usual
// fixes and names the settings that make it start.
func (p *Provider) Preflight(ctx context.Context, req sdk.PreflightRequest) error {
	cfg, diags := decodeConfig(req.Config)
	if err := diags.Err(); err != nil {
		return err
	}
	c, err := newCLI(cfg)
	if err != nil {
		return err
	}
	version, err := checkVersion(ctx, c)
	if err != nil {
		return err
	}
	rootless, err := c.rootless(ctx)
	if err != nil {
		return err
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if rootless && c.socket == "" {
		errs = append(errs, rootlessPrerequisites()...)
	}

	image := cfg.ImageFor(req.HostRepoPath)
	var imgs []struct {
		ID     string `json:"Id"`
		Config struct {
			User string `json:"User"`
		} `json:"Config"`
	}
	imageID := ""
	switch err := c.runJSON(ctx, &imgs, "image", "inspect", "--format", "json", image); {
	case noSuchObject(err):
		fail("image %q not found locally: build it with `%s`", image, engine.BuildImageFix(cfg.Config, image))
	case err != nil:
		fail("inspect image %q: %w", image, err)
	case len(imgs) == 1:
		imageID = imgs[0].ID
		p.homes.Inspected(image, imageID)
		u, _, _ := strings.Cut(imgs[0].Config.User, ":")
		if n, err := strconv.Atoi(u); err == nil && n != req.HostUID {
			fail("UID mismatch: image %q was built for UID %d, but the sandbox runs as UID %d: rebuild it with `sanddune podman build-image` (which passes your UID)",
				image, n, req.HostUID)
		}
	}
	for _, n := range cfg.Networks {
		if networkMode(n) {
			continue
		}
		if _, err := c.run(ctx, nil, "network", "exists", n); err != nil {
			if exitCode(err) == 1 {
				fail("podman network %q does not exist: create it with `podman network create %s` or fix network", n, n)
			} else {
				fail("check network %q: %w", n, err)
			}
		}
	}
	errs = append(errs, cfg.CheckHostPaths(req.HostRepoPath, true)...)
	if imageID != "" && len(errs) == 0 {
		if err := p.checked.testContainer(ctx, c, cfg, rootless, image, imageID, version, req.HostUID, req.HostGID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// networkMode reports whether n is a podman network mode rather than the
// name of a network.
func networkMode(n string) bool {
	mode, _, _ := strings.Cut(n, ":")
	switch mode {
	case "none", "host", "private", "bridge", "slirp4netns", "pasta", "container", "ns":
		return true
	}
	return false
}

// checkVersion checks that podman (and its service, with a socket) is
// recent enough, and returns the versions it reports.
func checkVersion(ctx context.Context, c cli) (string, error) {
	type version struct {
		Version string `json:"Version"`
	}
	var v struct {
		Client version  `json:"Client"`
		Server *version `json:"Server"` // with socket: the service's
	}
	if err := c.runJSON(ctx, &v, "version", "--format", "json"); err != nil {
		if c.socket != "" {
			return "", fmt.Errorf("cannot reach the podman service at %s: %w: start it with `podman system service %s`, or fix socket", c.socket, err, c.socket)
		}
		return "", fmt.Errorf("podman does not run (%s): %w", c.bin, err)
	}
	var versions []string
	for _, ver := range []*version{&v.Client, v.Server} {
		if ver == nil {
			continue
		}
		var major, minor int
		if _, err := fmt.Sscanf(ver.Version, "%d.%d", &major, &minor); err != nil {
			return "", fmt.Errorf("podman reports an unreadable version %q", ver.Version)
		}
		if major < minVersion[0] || major == minVersion[0] && minor < minVersion[1] {
			return "", fmt.Errorf("podman %s is too old: sanddune needs podman %d.%d or later", ver.Version, minVersion[0], minVersion[1])
		}
		versions = append(versions, ver.Version)
	}
	return strings.Join(versions, " "), nil
}

// rootlessPrerequisites checks what rootless podman needs of the host:
// newuidmap/newgidmap and subordinate id ranges for this user.
func rootlessPrerequisites() []error {
	var errs []error
	for _, bin := range []string{"newuidmap", "newgidmap"} {
		if _, err := exec.LookPath(bin); err != nil {
			if _, err := os.Stat("/usr/bin/" + bin); err != nil {
				errs = append(errs, fmt.Errorf("rootless podman needs %s: install it (Debian/Ubuntu: `apt-get install uidmap`; Fedora: shadow-utils)", bin))
			}
		}
	}
	u, err := user.Current()
	if err != nil {
		return append(errs, fmt.Errorf("rootless podman: who am I: %w", err))
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		if !hasSubIDs(f, u.Username, u.Uid) {
			errs = append(errs, fmt.Errorf("rootless podman needs subordinate ids for %s in %s: run `sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s`, then `podman system migrate`",
				u.Username, f, u.Username))
		}
	}
	return errs
}

// hasSubIDs reports whether file (/etc/subuid format) holds a range for the
// user name or uid.
func hasSubIDs(file, name, uid string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(fields) == 3 && (fields[0] == name || fields[0] == uid) && fields[2] != "0" {
			return true
		}
	}
	return false
}

// checkedConfigs remembers the test containers that started, with what
// they needed (Create applies it), so that blocks of one shape test it
// once per plugin process; across processes, the cache directory
// remembers them (passedKey).
type checkedConfigs struct {
	mu sync.Mutex
	// ok are the shapes that start, with what they need on this host.
	ok    map[string]*adjustment
	cache string // see preflightCache; "" remembers nothing across processes
}

// testContainer starts a throwaway container the way Create would (no
// mounts), unless the same shape passed before (in this process, or in
// the cache directory: passedKey of the image's id and podman's version),
// and, when it does not start, looks for the settings that make it start.
// Settings the block leaves unset are then adjusted for this host, and
// Create applies them (adjustmentFor); a setting the block made is never
// changed: the error names the one that works.
func (cc *checkedConfigs) testContainer(ctx context.Context, c cli, cfg config, rootless bool, image, imageID, version string, uid, gid int) error {
	args := containerArgs(cfg, rootless, uid, gid)
	mem := shape(c, args, image)
	key := passedKey(c, args, imageID, version)
	cc.mu.Lock()
	_, ok := cc.ok[mem]
	cc.mu.Unlock()
	if ok {
		return nil
	}
	if adj, ok := passed(cc.cache, key); ok {
		cc.remember(mem, adj)
		return nil
	}
	first := startTest(ctx, c, cfg, rootless, image, uid, gid)
	if first == nil {
		rememberPassed(cc.cache, key, nil)
		cc.remember(mem, nil)
		return nil
	}
	fixed, settings, err := fixTest(ctx, cfg, rootless, first, image, uid, gid)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := fmt.Sprintf("a test container cannot start with this config (%v)", first)
	if err == nil {
		if adj, ok := adjustmentOf(cfg, fixed, settings); ok {
			rememberPassed(cc.cache, key, adj)
			cc.remember(mem, adj)
			return nil
		}
		return fmt.Errorf("%s. It starts with these settings; set them in the sandbox block:\n  %s", msg, strings.Join(settings, "\n  "))
	}
	if hint := hintFor(cfg, rootless, err); hint != "" {
		msg += ". " + hint
	}
	if len(settings) > 0 {
		msg += fmt.Sprintf(". Tried %s, but then: %v", strings.Join(settings, ", "), err)
	}
	return errors.New(msg)
}

// remember notes that the shape mem starts, with adj applied (nil: as it
// is).
func (cc *checkedConfigs) remember(mem string, adj *adjustment) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.ok == nil {
		cc.ok = map[string]*adjustment{}
	}
	cc.ok[mem] = adj
}

// adjustmentFor returns the adjustment preflight found for a container of
// cfg in this process, or nil.
func (cc *checkedConfigs) adjustmentFor(c cli, cfg config, rootless bool, image string, uid, gid int) *adjustment {
	mem := shape(c, containerArgs(cfg, rootless, uid, gid), image)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.ok[mem]
}

// shape names a container's shape in this process: podman's argv for it.
func shape(c cli, args []string, image string) string {
	return strings.Join(append(c.argv(args...), image), "\x00")
}

// adjustment is what a config needs on this host that its block leaves
// unset: the settings preflight found (runtime, cgroup manager, ulimits,
// user namespace).
type adjustment struct {
	Runtime       string            `json:"runtime,omitempty"`
	CgroupManager string            `json:"cgroup_manager,omitempty"`
	Ulimits       map[string]string `json:"ulimits,omitempty"`
	UserNS        *string           `json:"userns,omitempty"`
	// Settings are the same, as HCL: what the run's progress says.
	Settings []string `json:"settings"`
}

// adjustmentOf is the change from orig to fixed, when it sets only what
// orig leaves unset.
func adjustmentOf(orig, fixed config, settings []string) (*adjustment, bool) {
	a := &adjustment{Settings: settings}
	if fixed.Runtime != orig.Runtime {
		if orig.Runtime != "" {
			return nil, false
		}
		a.Runtime = fixed.Runtime
	}
	if fixed.CgroupManager != orig.CgroupManager {
		if orig.CgroupManager != "" {
			return nil, false
		}
		a.CgroupManager = fixed.CgroupManager
	}
	for k, v := range fixed.Ulimits {
		if o, set := orig.Ulimits[k]; set {
			if o != v {
				return nil, false
			}
			continue
		}
		if a.Ulimits == nil {
			a.Ulimits = map[string]string{}
		}
		a.Ulimits[k] = v
	}
	if (fixed.UserNS == nil) != (orig.UserNS == nil) || fixed.UserNS != nil && *fixed.UserNS != *orig.UserNS {
		if orig.UserNS != nil {
			return nil, false
		}
		a.UserNS = fixed.UserNS
	}
	return a, true
}

// apply returns cfg with the adjustment.
func (a *adjustment) apply(cfg config) config {
	if a.Runtime != "" {
		cfg.Runtime = a.Runtime
	}
	if a.CgroupManager != "" {
		cfg.CgroupManager = a.CgroupManager
	}
	if len(a.Ulimits) > 0 {
		ul := maps.Clone(cfg.Ulimits)
		if ul == nil {
			ul = map[string]string{}
		}
		maps.Copy(ul, a.Ulimits)
		cfg.Ulimits = ul
	}
	if a.UserNS != nil {
		cfg.UserNS = a.UserNS
	}
	return cfg
}

// fixTest tries, one round at a time, the fixes a test container's error
// points at. It returns the config with the fixes, the settings (HCL), and
// the last error (nil: the test container started).
func fixTest(ctx context.Context, cfg config, rootless bool, err error, image string, uid, gid int) (config, []string, error) {
	var settings []string
	for round := 0; round < 16 && err != nil && ctx.Err() == nil; round++ {
		var s string
		cfg, s = nextFix(cfg, rootless, err)
		if s == "" {
			break
		}
		settings = setSetting(settings, s)
		c, cerr := newCLI(cfg)
		if cerr != nil {
			return cfg, settings, cerr
		}
		err = startTest(ctx, c, cfg, rootless, image, uid, gid)
	}
	return cfg, settings, err
}

// setSetting adds an HCL setting, replacing one of the same attribute.
func setSetting(settings []string, s string) []string {
	name, _, _ := strings.Cut(s, " ")
	for i, o := range settings {
		if n, _, _ := strings.Cut(o, " "); n == name {
			settings[i] = s
			return settings
		}
	}
	return append(settings, s)
}

// startTest runs `true` in a throwaway container shaped by cfg.
func startTest(ctx context.Context, c cli, cfg config, rootless bool, image string, uid, gid int) error {
	name := "sanddune-preflight-" + containerkit.RandomHex(4)
	args := append([]string{"run", "--rm", "--name", name, "--label", "sanddune.preflight=true"}, containerArgs(cfg, rootless, uid, gid)...)
	args = append(args, "--entrypoint", "true", image)
	_, err := c.run(ctx, nil, args...)
	if err != nil && ctx.Err() != nil {
		_ = removeContainer(context.WithoutCancel(ctx), c, name)
	}
	return err
}

// nextFix returns cfg changed by the fix that err points at, and that
// setting as HCL; "" when it knows none. A podman service (socket) chooses
// its runtime and cgroup manager itself (hintFor says how).
func nextFix(cfg config, rootless bool, err error) (config, string) {
	msg := err.Error()
	switch {
	case runtimeFails(msg):
		if cfg.Socket == "" && cfg.Runtime != "runc" && runcInstalled() {
			cfg.Runtime = "runc"
			return cfg, "runtime = " + hclString("runc")
		}
	case cgroupManagerFails(msg):
		if cfg.Socket == "" && cfg.CgroupManager != "cgroupfs" {
			cfg.CgroupManager = "cgroupfs"
			return cfg, "cgroup_manager = " + hclString("cgroupfs")
		}
	case strings.Contains(msg, "rlimit"):
		// Podman asks for nofile and nproc limits above the hard limits
		// its runtime inherits, which it cannot raise without
		// CAP_SYS_RESOURCE: lower the one that failed, from this process's
		// hard limit down by halves.
		name := "nofile"
		if strings.Contains(msg, "rlimit type 6") || strings.Contains(msg, "RLIMIT_NPROC") {
			name = "nproc"
		}
		hard := uint64(1 << 20)
		var lim syscall.Rlimit
		if syscall.Getrlimit(map[string]int{"nofile": syscall.RLIMIT_NOFILE, "nproc": 6 /* RLIMIT_NPROC */}[name], &lim) == nil && lim.Max < hard {
			hard = lim.Max
		}
		next := hard
		if cur, ok := cfg.Ulimits[name]; ok {
			soft, _, _ := strings.Cut(cur, ":")
			n, err := strconv.ParseUint(soft, 10, 64)
			if err != nil || n <= 1024 {
				break
			}
			next = min(max(n/2, 1024), hard)
		}
		ul := maps.Clone(cfg.Ulimits)
		if ul == nil {
			ul = map[string]string{}
		}
		ul[name] = fmt.Sprintf("%d:%d", next, next)
		cfg.Ulimits = ul
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(ul)) {
			parts = append(parts, k+" = "+hclString(ul[k]))
		}
		return cfg, "ulimits = { " + strings.Join(parts, ", ") + " }"
	case strings.Contains(msg, "keep-id") && !rootless:
		if cfg.userns(rootless) == "keep-id" {
			empty := ""
			cfg.UserNS = &empty
			return cfg, "userns = " + hclString("")
		}
	}
	return cfg, ""
}

// runtimeFails: crun cannot run containers on this host's cgroups
// (cgroup v1 or hybrid).
func runtimeFails(msg string) bool {
	return strings.Contains(msg, "cgroups in hybrid mode not supported") || strings.Contains(msg, "crun") && strings.Contains(msg, "cgroup")
}

// cgroupManagerFails: the systemd cgroup manager without systemd.
func cgroupManagerFails(msg string) bool {
	return strings.Contains(msg, "systemd not running") || strings.Contains(msg, "systemd cgroups manager") || strings.Contains(msg, "/run/systemd/private")
}

// hintFor says what to do about a test container error no setting fixes.
func hintFor(cfg config, rootless bool, err error) string {
	msg := err.Error()
	switch {
	case cfg.Socket != "" && (runtimeFails(msg) || cgroupManagerFails(msg)):
		return "The podman service at " + cfg.Socket + " cannot start containers with its runtime or cgroup manager: restart it with the flags this host needs, e.g. `podman --runtime runc --cgroup-manager cgroupfs system service`"
	case strings.Contains(msg, "/dev/net/tun"):
		return `Rootless networking (slirp4netns/pasta) cannot open /dev/net/tun: make it usable by your user (it is usually mode 0666), or set network = "none"`
	case strings.Contains(msg, "catatonit") || strings.Contains(msg, "container-init"):
		return "podman's init (catatonit) is missing: install it (Debian/Ubuntu: `apt-get install catatonit`)"
	case rootless && (cfg.CPUs > 0 || cfg.Memory > 0 || cfg.PidsLimit > 0) && strings.Contains(msg, "cgroup"):
		return "Rootless podman can enforce cpus, memory and pids_limit only on cgroup v2 with delegated controllers: remove them, or run rootful"
	}
	return ""
}

func runcInstalled() bool {
	if _, err := exec.LookPath("runc"); err == nil {
		return true
	}
	for _, p := range []string{"/usr/bin/runc", "/usr/sbin/runc", "/usr/local/bin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}
