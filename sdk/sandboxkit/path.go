package sandboxkit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrConfinement is wrapped by every error about a path outside the roots
// a sandbox confines paths to.
var ErrConfinement = errors.New("path confinement violation")

// Within reports whether p is dir or lies below it. Both must be clean and
// absolute; "/" holds every path.
func Within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// Resolve returns the real path of the existing path p, following every
// symlink. Both p and its real path must lie within one of roots, which
// must be clean, absolute and free of symlinks (filepath.EvalSymlinks).
// Use it for paths that are read or entered: a cwd, a CopyOut source.
func Resolve(p string, roots ...string) (string, error) {
	p, err := confine(p, roots)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if !withinAny(real, roots) {
		return "", fmt.Errorf("%w: %s resolves to %s, outside %s", ErrConfinement, p, real, area(roots))
	}
	return real, nil
}

// ResolveTarget returns where a copy to p writes: p's parent with its
// symlinks resolved, joined with p's base name (a symlink at p itself is
// replaced by Copy, never followed). The parent may not exist yet: then its
// deepest existing ancestor is resolved, and must not be a dangling
// symlink. p and the resolved parent must lie within one of roots (see
// Resolve), so a root itself cannot be a target.
func ResolveTarget(p string, roots ...string) (string, error) {
	p, err := confine(p, roots)
	if err != nil {
		return "", err
	}
	parent, rest := filepath.Dir(p), ""
	for {
		real, err := filepath.EvalSymlinks(parent)
		if err == nil {
			parent = filepath.Join(real, rest)
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(parent); lerr == nil {
			return "", fmt.Errorf("%w: %s is a dangling symlink", ErrConfinement, parent)
		}
		rest = filepath.Join(filepath.Base(parent), rest)
		parent = filepath.Dir(parent)
	}
	if !withinAny(parent, roots) {
		return "", fmt.Errorf("%w: %s resolves to %s, outside %s", ErrConfinement, p, filepath.Join(parent, filepath.Base(p)), area(roots))
	}
	return filepath.Join(parent, filepath.Base(p)), nil
}

// confine cleans p and checks it lexically.
func confine(p string, roots []string) (string, error) {
	p = filepath.Clean(p)
	if !withinAny(p, roots) {
		return "", fmt.Errorf("%w: %s is outside %s", ErrConfinement, p, area(roots))
	}
	return p, nil
}

func withinAny(p string, roots []string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	for _, r := range roots {
		if Within(p, r) {
			return true
		}
	}
	return false
}

func area(roots []string) string {
	return "the sandbox (" + strings.Join(roots, ", ") + ")"
}
