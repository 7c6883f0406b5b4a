package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// configDir is the repo's sanddune directory holding the Dockerfile.
const configDir = ".sanddune"

// contextExcludes never go into a .sanddune build context: secrets, run
// logs and worktrees.
var contextExcludes = []string{".env", "logs", "worktrees"}

func (p *Provider) Commands(ctx context.Context) ([]sdk.CommandSpec, error) {
	return []sdk.CommandSpec{
		{Name: "build-image", Usage: "build-image [--image-name N] [--dockerfile F]",
			Short: "Build the sandbox image from .sanddune/Dockerfile with your UID/GID"},
		{Name: "remove-image", Usage: "remove-image [--image-name N]", Short: "Remove the sandbox image"},
	}, nil
}

func (p *Provider) RunCommand(ctx context.Context, req sdk.RunCommandRequest, out sdk.OutputFunc) (int, error) {
	fset := flag.NewFlagSet(req.Name, flag.ContinueOnError)
	imageName := fset.String("image-name", "", "image name (default sanddune:<repo-dir-name>)")
	var dockerfile *string
	switch req.Name {
	case "build-image":
		dockerfile = fset.String("dockerfile", "", "Dockerfile to build; the build context is the working directory")
	case "remove-image":
	default:
		return 2, fmt.Errorf("unknown docker command %q (want build-image or remove-image)", req.Name)
	}
	help, err := containerkit.ParseCommandArgs(fset, "sanddune docker "+usage(req.Name), req.Args, out)
	if err != nil {
		return 2, err
	} else if help {
		return 0, nil
	}
	repo, name := containerkit.CommandImage(req, *imageName)
	cli, err := p.client()
	if err != nil {
		return 1, err
	}
	if req.Name == "remove-image" {
		if _, err := cli.ImageRemove(ctx, name, image.RemoveOptions{PruneChildren: true}); err != nil {
			if cerrdefs.IsNotFound(err) {
				return 1, fmt.Errorf("image %q not found", name)
			}
			return 1, fmt.Errorf("remove image %q: %w", name, err)
		}
		printf(out, sdk.Stdout, "Image %s removed.", name)
		return 0, nil
	}
	return buildImage(ctx, cli, req, repo, name, *dockerfile, out)
}

func usage(name string) string {
	if name == "build-image" {
		return "build-image [--image-name N] [--dockerfile F]"
	}
	return "remove-image [--image-name N]"
}

func printf(out sdk.OutputFunc, stream sdk.Stream, format string, args ...any) {
	out(sdk.OutputLine{Stream: stream, Text: []byte(fmt.Sprintf(format, args...))})
}

// buildImage builds through the Engine API with AGENT_UID/AGENT_GID from
// the host, streaming the build output.
func buildImage(ctx context.Context, cli *client.Client, req sdk.RunCommandRequest, repo, name, dockerfile string, out sdk.OutputFunc) (int, error) {
	var ctxDir, dfPath string
	var excludes []string
	if dockerfile == "" {
		ctxDir = filepath.Join(repo, configDir)
		dfPath = filepath.Join(ctxDir, "Dockerfile")
		if _, err := os.Stat(dfPath); err != nil {
			return 1, fmt.Errorf("no %s/Dockerfile in %s: run `sanddune init` first, or pass --dockerfile", configDir, repo)
		}
		excludes = contextExcludes
	} else {
		ctxDir = req.Cwd
		dfPath = dockerfile
		if !filepath.IsAbs(dfPath) {
			dfPath = filepath.Join(req.Cwd, dfPath)
		}
		if _, err := os.Stat(dfPath); err != nil {
			return 1, fmt.Errorf("dockerfile: %w", err)
		}
	}
	uid, gid := strconv.Itoa(req.HostUID), strconv.Itoa(req.HostGID)
	printf(out, sdk.Stdout, "Building Docker image %s (AGENT_UID=%s AGENT_GID=%s)...", name, uid, gid)

	dfName := ""
	if rel, err := filepath.Rel(ctxDir, dfPath); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		dfName = filepath.ToSlash(rel)
	}
	extra := ""
	if dfName == "" { // outside the context: add it under a private name
		extra = ".sanddune-dockerfile-" + containerkit.RandomHex(4)
		dfName = extra
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeContext(pw, ctxDir, dfName, excludes, extra, dfPath)) }()
	defer pr.Close()

	resp, err := cli.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{name},
		Dockerfile:  dfName,
		BuildArgs:   map[string]*string{"AGENT_UID": &uid, "AGENT_GID": &gid},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return 1, fmt.Errorf("docker build: %w", err)
	}
	defer resp.Body.Close()
	stdout := sdk.NewLineWriter(sdk.Stdout, out)
	dec := json.NewDecoder(resp.Body)
	for {
		var m buildMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 1, fmt.Errorf("docker build: read progress: %w", err)
		}
		if m.Error != nil || m.ErrorText != "" {
			_ = stdout.Close()
			msg := m.ErrorText
			if m.Error != nil && m.Error.Message != "" {
				msg = m.Error.Message
			}
			return 1, fmt.Errorf("docker build failed: %s", msg)
		}
		if m.Stream != "" {
			_, _ = stdout.Write([]byte(m.Stream))
		}
		if m.Status != "" {
			_ = stdout.Close()
			printf(out, sdk.Stdout, "%s", strings.TrimSpace(strings.Join([]string{m.ID, m.Status}, " ")))
		}
	}
	_ = stdout.Close()
	printf(out, sdk.Stdout, "Build complete: %s", name)
	return 0, nil
}

// buildMessage is one JSON message of the build progress stream.
type buildMessage struct {
	Stream string `json:"stream"`
	Status string `json:"status"`
	ID     string `json:"id"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	ErrorText string `json:"error"`
}

// writeContext tars a build context, honouring .dockerignore and excludes;
// the Dockerfile and .dockerignore are always sent. A Dockerfile outside the
// context is added as extra.
func writeContext(w io.Writer, dir, dfName string, excludes []string, extra, dfPath string) error {
	patterns := append([]string(nil), excludes...)
	if f, err := os.Open(filepath.Join(dir, ".dockerignore")); err == nil {
		ps, err := ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf(".dockerignore: %w", err)
		}
		patterns = append(patterns, ps...)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return fmt.Errorf(".dockerignore: %w", err)
	}
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if rel != dfName && rel != ".dockerignore" {
			skip, err := pm.MatchesOrParentMatches(rel)
			if err != nil {
				return err
			}
			if skip {
				if e.IsDir() && !pm.Exclusions() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		return addContextFile(tw, p, rel, fi)
	})
	if err != nil {
		return err
	}
	if extra != "" {
		fi, err := os.Stat(dfPath)
		if err != nil {
			return err
		}
		if err := addContextFile(tw, dfPath, extra, fi); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addContextFile(tw *tar.Writer, p, name string, fi fs.FileInfo) error {
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	h, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return nil // sockets and the like are skipped
	}
	h.Name = name
	if fi.IsDir() {
		h.Name += "/"
	}
	h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
	return sandboxkit.WriteTarEntry(tw, h, p)
}
