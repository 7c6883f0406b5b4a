package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// cleanupTimeout bounds teardown work that must happen even after the
// caller's context is cancelled.
const cleanupTimeout = 30 * time.Second

// State is what Info().State holds (JSON).
type State struct {
	ContainerID string `json:"container_id"`
	Name        string `json:"name"`
	Image       string `json:"image"`
}

// Create starts one container for a run: `sleep infinity` under docker's
// init as the keepalive, the worktree at /home/agent/workspace, git
// metadata at the same absolute paths, the host UID:GID (or
// container_uid/gid) and HOME=/home/agent owned by that user.
func (p *Provider) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	cfg, diags := decodeConfig(req.Config)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	cli, err := p.client()
	if err != nil {
		return nil, err
	}
	uid, gid := req.HostUID, req.HostGID
	if cfg.UID != nil {
		uid = *cfg.UID
	}
	if cfg.GID != nil {
		gid = *cfg.GID
	}
	mounts, err := containerMounts(cfg, req)
	if err != nil {
		return nil, err
	}
	image := cfg.image(req.HostRepoPath)

	env := sandboxkit.MergeEnv(req.Env, cfg.Env)
	env["HOME"] = homeDir

	init := true
	hostCfg := &container.HostConfig{
		Mounts:   mounts,
		Init:     &init,
		GroupAdd: cfg.Groups,
		Resources: container.Resources{
			NanoCPUs: int64(cfg.CPUs * 1e9),
			Memory:   cfg.Memory,
		},
	}
	if cfg.PidsLimit > 0 {
		hostCfg.PidsLimit = &cfg.PidsLimit
	}
	for _, d := range cfg.Devices {
		hostCfg.Devices = append(hostCfg.Devices, container.DeviceMapping{
			PathOnHost: d.HostPath, PathInContainer: d.ContainerPath, CgroupPermissions: d.Permissions,
		})
	}
	if len(cfg.Networks) > 0 {
		hostCfg.NetworkMode = container.NetworkMode(cfg.Networks[0])
	}
	name := containerName(req.RunName)
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image:      image,
		User:       fmt.Sprintf("%d:%d", uid, gid),
		Env:        sandboxkit.EnvList(env),
		WorkingDir: workspaceDir,
		Entrypoint: []string{"sleep"},
		Cmd:        []string{"infinity"},
		Labels:     maps.Clone(req.Labels),
	}, hostCfg, nil, nil, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("image %q not found locally: build it with `sanddune docker build-image`: %w", image, err)
		}
		return nil, fmt.Errorf("create container: %w", err)
	}
	s := &sandbox{cli: cli, id: created.ID, name: name, uid: uid, gid: gid, mounts: mounts}
	state, _ := json.Marshal(State{ContainerID: created.ID, Name: name, Image: image})
	s.info = sdk.SandboxInfo{ID: created.ID, RepoPath: workspaceDir, HomePath: homeDir, State: state}

	if err := s.start(ctx, cfg, req.WorktreePath != ""); err != nil {
		_ = s.Close(ctx)
		return nil, err
	}
	return s, nil
}

// start prepares the agent home, joins extra networks and starts the container.
func (s *sandbox) start(ctx context.Context, cfg config, hasWorktree bool) error {
	dirs := s.ownedDirs(hasWorktree)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "home/", Mode: 0o755, ModTime: now})
	for _, d := range dirs {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/",
			Mode: 0o755, Uid: s.uid, Gid: s.gid, ModTime: now})
	}
	_ = tw.Close()
	if err := s.cli.CopyToContainer(ctx, s.id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("prepare %s: %w", homeDir, err)
	}
	for _, n := range cfg.Networks[min(1, len(cfg.Networks)):] {
		if err := s.cli.NetworkConnect(ctx, n, s.id, nil); err != nil {
			return fmt.Errorf("connect to network %q: %w", n, err)
		}
	}
	if err := s.cli.ContainerStart(ctx, s.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}

// ownedDirs lists the directories, from /home/agent down, that must exist
// owned by the container user: the home itself and the parents of mount
// targets under it. Mount targets and anything inside them are left alone
// (they are host paths).
func (s *sandbox) ownedDirs(hasWorktree bool) []string {
	inMount := func(p string) bool {
		for _, m := range s.mounts {
			if sandboxkit.Within(p, m.Target) {
				return true
			}
		}
		return false
	}
	set := map[string]bool{homeDir: true}
	if !hasWorktree {
		set[workspaceDir] = true
	}
	for _, m := range s.mounts {
		for d := path.Dir(m.Target); sandboxkit.Within(d, homeDir); d = path.Dir(d) {
			set[d] = true
		}
	}
	var dirs []string
	for d := range set {
		if !inMount(d) {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	return dirs
}

// containerMounts is the bind-mount set: worktree, git metadata, config mounts.
func containerMounts(cfg config, req sdk.CreateRequest) ([]mount.Mount, error) {
	var ms []mount.Mount
	add := func(src, dst string, ro bool) error {
		for _, m := range ms {
			if m.Target == dst {
				return fmt.Errorf("two mounts target %s (%s and %s)", dst, m.Source, src)
			}
		}
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: ro})
		return nil
	}
	if req.WorktreePath != "" {
		if !path.IsAbs(req.WorktreePath) {
			return nil, fmt.Errorf("worktree path %q is not absolute", req.WorktreePath)
		}
		_ = add(req.WorktreePath, workspaceDir, false)
	}
	for _, g := range req.GitMounts {
		dst := g.SandboxPath
		if dst == "" {
			dst = g.HostPath
		}
		if !path.IsAbs(g.HostPath) || !path.IsAbs(dst) {
			return nil, fmt.Errorf("git mount %q: paths must be absolute", g.HostPath)
		}
		if err := add(g.HostPath, path.Clean(dst), g.ReadOnly); err != nil {
			return nil, err
		}
	}
	for i, m := range cfg.Mounts {
		src, err := m.Source(req.HostRepoPath)
		if err != nil {
			return nil, fmt.Errorf("mount.%d: %w", i, err)
		}
		if err := add(src, m.SandboxPath, m.ReadOnly); err != nil {
			return nil, fmt.Errorf("mount.%d: %w", i, err)
		}
	}
	return ms, nil
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

func containerName(run string) string {
	n := strings.Trim(nameUnsafe.ReplaceAllString(run, "-"), "-._")
	if len(n) > 40 {
		n = n[:40]
	}
	if n == "" {
		n = "run"
	}
	return "sanddune-" + n + "-" + randomHex(4)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sandbox is one container.
type sandbox struct {
	cli      *client.Client
	id, name string
	uid, gid int
	mounts   []mount.Mount
	info     sdk.SandboxInfo

	mu     sync.Mutex
	closed bool
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

func (s *sandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close force-removes the container (SIGKILL, no stop grace period). It is
// idempotent and still works when ctx is already cancelled.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := s.cli.ContainerRemove(ctx, s.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
		// Someone else (docker rm -f) is removing it: wait for that.
		wait, errc := s.cli.ContainerWait(ctx, s.id, container.WaitConditionRemoved)
		select {
		case <-wait:
			err = nil
		case err = <-errc:
		}
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", s.name, err)
	}
	s.closed = true
	return nil
}

// resolvePath maps a sandbox path (relative to the workspace, or absolute)
// and confines it to the agent home (workspace included), /tmp and the
// mount targets.
func (s *sandbox) resolvePath(p string) (string, error) {
	if p == "" {
		return workspaceDir, nil
	}
	abs := path.Clean(p)
	if !path.IsAbs(p) {
		abs = path.Join(workspaceDir, p)
		if !sandboxkit.Within(abs, workspaceDir) {
			return "", fmt.Errorf("path %q leaves the workspace", p)
		}
	}
	if sandboxkit.Within(abs, homeDir) || sandboxkit.Within(abs, "/tmp") {
		return abs, nil
	}
	for _, m := range s.mounts {
		if sandboxkit.Within(abs, m.Target) {
			return abs, nil
		}
	}
	return "", fmt.Errorf("path %q is outside the sandbox (allowed: %s, /tmp and mounts)", p, homeDir)
}

var _ sdk.TTYSandbox = (*sandbox)(nil)
