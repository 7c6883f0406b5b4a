package podman

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// configDir is the repo's sanddune directory holding the Containerfile.
const configDir = ".sanddune"

// contextExcludes never go into a .sanddune build context: secrets, run
// logs, worktrees and patches.
var contextExcludes = []string{".env", "logs", "worktrees", "patches"}

var usages = map[string]string{
	"build-image":  "build-image [--image-name N] [--containerfile F] [--runtime R] [--cgroup-manager M]",
	"remove-image": "remove-image [--image-name N]",
}

func (p *Provider) Commands(ctx context.Context) ([]sdk.CommandSpec, error) {
	return []sdk.CommandSpec{
		{Name: "build-image", Usage: usages["build-image"],
			Short: "Build the sandbox image from .sanddune/Containerfile (or Dockerfile) with your UID/GID"},
		{Name: "remove-image", Usage: usages["remove-image"], Short: "Remove the sandbox image"},
	}, nil
}

func (p *Provider) RunCommand(ctx context.Context, req sdk.RunCommandRequest, out sdk.OutputFunc) (int, error) {
	usage, ok := usages[req.Name]
	if !ok {
		return 2, fmt.Errorf("unknown podman command %q (want build-image or remove-image)", req.Name)
	}
	fset := flag.NewFlagSet(req.Name, flag.ContinueOnError)
	imageName := fset.String("image-name", "", "image name (default sanddune:<repo-dir-name>)")
	var cfg config
	containerfile := new(string)
	if req.Name == "build-image" {
		containerfile = fset.String("containerfile", "", "Containerfile to build; the build context is the working directory")
		// RUN steps start containers: the sandbox block's runtime settings apply.
		fset.StringVar(&cfg.Runtime, "runtime", "", "OCI runtime for RUN steps (as the sandbox block's runtime)")
		fset.StringVar(&cfg.CgroupManager, "cgroup-manager", "", "cgroup manager for RUN steps (as the sandbox block's cgroup_manager)")
	}
	help, err := containerkit.ParseCommandArgs(fset, "sanddune podman "+usage, req.Args, out)
	if err != nil {
		return 2, err
	} else if help {
		return 0, nil
	}
	repo, name := containerkit.CommandImage(req, *imageName)
	c, err := newCLI(cfg)
	if err != nil {
		return 1, err
	}
	if req.Name == "remove-image" {
		if _, err := c.run(ctx, nil, "rmi", name); err != nil {
			if noSuchObject(err) {
				return 1, fmt.Errorf("image %q not found", name)
			}
			return 1, fmt.Errorf("remove image %q: %w", name, err)
		}
		printf(out, "Image %s removed.", name)
		return 0, nil
	}
	return buildImage(ctx, c, cfg, req, repo, name, *containerfile, out)
}

func printf(out sdk.OutputFunc, format string, args ...any) {
	out(sdk.OutputLine{Stream: sdk.Stdout, Text: []byte(fmt.Sprintf(format, args...))})
}

// buildImage runs `podman build` with AGENT_UID/AGENT_GID from the host,
// streaming its output. The default context is a copy of .sanddune
// without secrets, logs, worktrees and patches.
func buildImage(ctx context.Context, c cli, cfg config, req sdk.RunCommandRequest, repo, name, containerfile string, out sdk.OutputFunc) (int, error) {
	var ctxDir, file string
	if containerfile == "" {
		src := filepath.Join(repo, configDir)
		for _, f := range []string{"Containerfile", "Dockerfile"} {
			if _, err := os.Stat(filepath.Join(src, f)); err == nil {
				file = f
				break
			}
		}
		if file == "" {
			return 1, fmt.Errorf("no %s/Containerfile or %s/Dockerfile in %s: run `sanddune init` first, or pass --containerfile", configDir, configDir, repo)
		}
		tmp, err := os.MkdirTemp("", "sanddune-build-")
		if err != nil {
			return 1, err
		}
		defer os.RemoveAll(tmp)
		if err := copyContext(ctx, src, tmp); err != nil {
			return 1, fmt.Errorf("build context: %w", err)
		}
		ctxDir, file = tmp, filepath.Join(tmp, file)
	} else {
		ctxDir, file = req.Cwd, containerfile
		if !filepath.IsAbs(file) {
			file = filepath.Join(req.Cwd, file)
		}
		if _, err := os.Stat(file); err != nil {
			return 1, fmt.Errorf("containerfile: %w", err)
		}
	}
	uid, gid := strconv.Itoa(req.HostUID), strconv.Itoa(req.HostGID)
	printf(out, "Building Podman image %s (AGENT_UID=%s AGENT_GID=%s)...", name, uid, gid)
	var r sandboxkit.Runner
	var failed []string // the last lines, to explain a failure
	res, err := r.Run(ctx, sandboxkit.Command{
		Argv: c.argv("build", "--tag", name, "--file", file,
			"--build-arg", "AGENT_UID="+uid, "--build-arg", "AGENT_GID="+gid, ctxDir),
		Env: c.environMap(nil),
	}, func(l sdk.OutputLine) {
		failed = append(failed[max(0, len(failed)-20):], string(l.Text))
		out(l)
	})
	if err != nil {
		return 1, fmt.Errorf("podman build: %w", err)
	}
	if res.ExitCode != 0 {
		msg := fmt.Sprintf("podman build failed (exit %d): see its output above", res.ExitCode)
		if cfg.Runtime == "" && cfg.CgroupManager == "" && strings.Contains(strings.Join(failed, "\n"), "runtime") {
			msg += "; RUN steps start containers: if your podman sandbox block sets runtime or cgroup_manager, pass the same --runtime / --cgroup-manager"
		}
		return 1, errors.New(msg)
	}
	printf(out, "Build complete: %s", name)
	return 0, nil
}

// copyContext copies the entries of the .sanddune directory src into dst,
// leaving out contextExcludes; podman applies .containerignore and
// .dockerignore itself.
func copyContext(ctx context.Context, src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if slices.Contains(contextExcludes, e.Name()) {
			continue
		}
		if err := (sandboxkit.Area{dst}).CopyIn(ctx, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
