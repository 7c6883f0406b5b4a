package sandboxkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// TempDirs are sandbox directories under os.TempDir(), each named Prefix
// followed by a name and a random suffix, and each holding a labels file
// (the CreateRequest labels as JSON). List and Remove implement
// sdk.ResourceLister on top of them, so that `sanddune gc` finds the
// directories a sanddune process that died left behind.
type TempDirs struct {
	// Prefix starts every directory name, e.g. "sanddune-myprovider-".
	Prefix string
	// LabelsFile names the labels file in each directory.
	LabelsFile string
}

// Check reports whether a directory can be created under os.TempDir().
func (t TempDirs) Check() error {
	dir, err := os.MkdirTemp("", t.Prefix+"preflight-")
	if err != nil {
		return fmt.Errorf("temp dir %s is not writable (set TMPDIR to a writable directory): %w", os.TempDir(), err)
	}
	return os.Remove(dir)
}

// Create makes a directory Prefix+name+random under os.TempDir() holding
// the labels file, and returns its path with symlinks resolved.
func (t TempDirs) Create(name string, labels map[string]string) (string, error) {
	dir, err := os.MkdirTemp("", t.Prefix+name)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		var data []byte
		if data, err = json.Marshal(labels); err == nil {
			err = os.WriteFile(filepath.Join(real, t.LabelsFile), data, 0o600)
		}
	}
	if err != nil {
		_ = RemoveAll(dir)
		return "", err
	}
	return real, nil
}

// List lists the directories whose labels file carries sdk.LabelRun; the
// resource ID is the directory path.
func (t TempDirs) List() ([]sdk.Resource, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), t.Prefix+"*"))
	if err != nil {
		return nil, err
	}
	var res []sdk.Resource
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, t.LabelsFile))
		if err != nil {
			continue // not a sandbox, or one still being created
		}
		var labels map[string]string
		if json.Unmarshal(data, &labels) != nil || labels[sdk.LabelRun] == "" {
			continue
		}
		res = append(res, sdk.Resource{ID: dir, Labels: labels})
	}
	return res, nil
}

// Remove removes a directory List returned; one already gone is not an
// error. It refuses any other path.
func (t TempDirs) Remove(id string) error {
	dir := filepath.Clean(id)
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), t.Prefix) {
		return fmt.Errorf("%q is not a sandbox directory", id)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, t.LabelsFile)); err != nil {
		return fmt.Errorf("%q is not a sandbox directory: %w", id, err)
	}
	return RemoveAll(dir)
}

// RemoveAll removes dir even when it holds read-only directories (agents
// chmod things; a Go module cache is read-only).
func RemoveAll(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
