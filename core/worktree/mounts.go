package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// gitMounts returns the git metadata a bind-mount sandbox needs, besides
// the working tree dir itself (mounted by the provider), for git to work in
// dir: see the package doc. Paths are the ones dir's .git file names, so
// they resolve inside the sandbox when mounted at the same path.
func gitMounts(dir string) ([]sdk.Mount, error) {
	gitDir, commonDir, err := gitDirs(dir)
	if err != nil {
		return nil, err
	}
	var ms []sdk.Mount
	add := func(p string, ro bool) {
		if !within(dir, p) {
			ms = append(ms, sdk.Mount{HostPath: p, SandboxPath: p, ReadOnly: ro})
		}
	}
	if gitDir == commonDir { // a main working tree: its state lives in the common dir
		add(commonDir, false)
		return ms, nil
	}
	// Reflogs of branches live in <common>/logs; git cannot create it
	// inside the sandbox, where the common dir itself is not writable.
	if err := os.MkdirAll(filepath.Join(commonDir, "logs"), 0o755); err != nil {
		return nil, err
	}
	add(gitDir, false)
	for _, name := range []string{"objects", "refs", "logs"} {
		add(filepath.Join(commonDir, name), false)
	}
	for _, name := range []string{"HEAD", "config", "packed-refs", "shallow", "info"} {
		p := filepath.Join(commonDir, name)
		if _, err := os.Stat(p); err == nil {
			add(p, true)
		}
	}
	return ms, nil
}

// gitDirs reads dir/.git and returns the git dir and common dir it names.
func gitDirs(dir string) (gitDir, commonDir string, err error) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", "", err
	}
	if fi.IsDir() {
		return dotgit, dotgit, nil
	}
	b, err := readSmall(dotgit)
	if err != nil {
		return "", "", err
	}
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", "", fmt.Errorf("%s: not a gitdir file", dotgit)
	}
	gitDir = s
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(dir, gitDir)
	}
	gitDir = filepath.Clean(gitDir)
	commonDir = gitDir
	if c, err := readSmall(filepath.Join(gitDir, "commondir")); err == nil {
		commonDir = strings.TrimSpace(string(c))
		if !filepath.IsAbs(commonDir) {
			commonDir = filepath.Join(gitDir, commonDir)
		}
		commonDir = filepath.Clean(commonDir)
	}
	return gitDir, commonDir, nil
}

// within reports whether p is root or inside it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
