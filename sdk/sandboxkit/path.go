package sandboxkit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// Within reports whether p is dir or lies below it. Both must be clean and
// absolute; "/" holds every path.
func Within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// SandboxPath maps a path of the sandbox contract (ExecRequest.Cwd, the
// sandbox side of CopyIn and CopyOut) to a clean absolute sandbox path:
// a relative path resolves against repo and must stay inside it, so
// "../escape.txt" or a cwd of ".." is refused (sdk.ErrConfinement). Paths inside a
// container use forward slashes, so this is lexical and slash-based.
func SandboxPath(p, repo string) (string, error) {
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	abs := path.Join(repo, p)
	if abs != repo && !strings.HasPrefix(abs, strings.TrimSuffix(repo, "/")+"/") {
		return "", fmt.Errorf("%w: %q leaves the repository directory %s", sdk.ErrConfinement, p, repo)
	}
	return abs, nil
}

// Area is the set of host directories a sandbox's files live in (each
// clean, absolute and free of symlinks, see filepath.EvalSymlinks). Every
// operation goes through an os.Root opened on the deepest directory that
// lexically holds its path, so a symlink in the sandbox, even one swapped
// in while the operation runs, never leads outside that directory.
type Area []string

// root opens the directory of a that holds p and returns p relative to it.
func (a Area) root(p string) (*os.Root, string, error) {
	p = filepath.Clean(p)
	best := ""
	for _, d := range a {
		if filepath.IsAbs(p) && Within(p, d) && len(d) > len(best) {
			best = d
		}
	}
	if best == "" {
		return nil, "", fmt.Errorf("%w: %s is outside the sandbox (%s)", sdk.ErrConfinement, p, strings.Join(a, ", "))
	}
	rel, err := filepath.Rel(best, p)
	if err != nil {
		return nil, "", err
	}
	r, err := os.OpenRoot(best)
	if err != nil {
		return nil, "", err
	}
	return r, rel, nil
}

// Dir checks that p is a directory of the area, following symlinks only
// as long as they stay inside it. Use it for a command's working directory.
func (a Area) Dir(p string) error {
	r, rel, err := a.root(p)
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := r.Stat(rel)
	if err != nil {
		return confined(err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", p)
	}
	return nil
}

// confined marks os.Root's "path escapes" errors as sdk.ErrConfinement.
func confined(err error) error {
	if err != nil && strings.Contains(err.Error(), "escapes from parent") {
		return fmt.Errorf("%w: %w", sdk.ErrConfinement, err)
	}
	return err
}

// notExist reports whether err says a path does not exist.
func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
