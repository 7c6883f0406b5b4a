package worktree

import (
	"errors"
	"os"
	"path/filepath"
)

// StateDirName is the directory at a host repository's root where sanddune
// keeps worktrees, patches and logs.
const StateDirName = ".sanddune"

// EnsureIgnoredDir creates dir (and parents) with a .gitignore containing
// "*", so that git ignores the directory and everything in it, including
// that .gitignore: for what sanddune keeps under StateDirName, which must
// never make the host's working tree dirty.
func EnsureIgnoredDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("# created by sanddune: ignore this directory\n*\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
