package pluginhost

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// RepoLockFile is the repository's plugin lock file, relative to its root.
const RepoLockFile = ".sanddune/plugins.lock.hcl"

// LockEntry pins one plugin binary by its SHA-256.
type LockEntry struct {
	Name    string `hcl:"name,label"`
	Source  string `hcl:"source"`
	Version string `hcl:"version,optional"`
	SHA256  string `hcl:"sha256"`
}

// Lock is a plugin lock file: what each external plugin binary must hash
// to before it is started. Entries are keyed by plugin name, wherever the
// binary is found.
type Lock struct {
	Path    string
	Entries map[string]LockEntry
}

type lockFile struct {
	Plugins []LockEntry `hcl:"plugin,block"`
}

// ReadLock reads a lock file; a missing file is an empty lock.
func ReadLock(path string) (*Lock, error) {
	l := &Lock{Path: path, Entries: map[string]LockEntry{}}
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading plugin lock file: %w", err)
	}
	hf, diags := hclparse.NewParser().ParseHCL(src, path)
	var lf lockFile
	if !diags.HasErrors() {
		diags = gohcl.DecodeBody(hf.Body, nil, &lf)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("plugin lock file %s: %w (fix it, or delete it and run `sanddune plugins lock`)", path, diags)
	}
	for _, e := range lf.Plugins {
		if _, dup := l.Entries[e.Name]; dup {
			return nil, fmt.Errorf("plugin lock file %s: plugin %q is locked twice (delete it and run `sanddune plugins lock`)", path, e.Name)
		}
		if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("plugin lock file %s: plugin %q: sha256 %q is not a hex SHA-256 (delete it and run `sanddune plugins lock`)", path, e.Name, e.SHA256)
		}
		l.Entries[e.Name] = e
	}
	return l, nil
}

// Write writes the lock file atomically, entries sorted by name.
func (l *Lock) Write() error {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(
		"# Plugin binaries pinned by SHA-256, checked before each start.\n" +
			"# Written by `sanddune plugins lock`; commit it.\n")}})
	names := make([]string, 0, len(l.Entries))
	for n := range l.Entries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := l.Entries[n]
		body.AppendNewline()
		b := body.AppendNewBlock("plugin", []string{n}).Body()
		b.SetAttributeValue("source", cty.StringVal(e.Source))
		if e.Version != "" {
			b.SetAttributeValue("version", cty.StringVal(e.Version))
		}
		b.SetAttributeValue("sha256", cty.StringVal(e.SHA256))
	}
	return writeAtomic(l.Path, bytes.NewReader(f.Bytes()), 0o644)
}

// AddLockEntry adds e to the lock file at path unless an entry for its
// plugin is there already (added is false then). The read and the write
// happen under an flock(2) on the file's directory, so concurrent sanddune
// processes lose no entry.
func AddLockEntry(path string, e LockEntry) (added bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer d.Close() // releases the flock
	for {
		if err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return false, fmt.Errorf("locking %s: %w", dir, err)
	}
	l, err := ReadLock(path)
	if err != nil {
		return false, err
	}
	if _, ok := l.Entries[e.Name]; ok {
		return false, nil
	}
	l.Entries[e.Name] = e
	return true, l.Write()
}

// writeAtomic replaces path with what r holds through a temp file and a
// rename.
func writeAtomic(path string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// FileSHA256 is the hex SHA-256 of a file's content.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ChecksumError says a plugin binary does not hash to what a lock file
// pins; the plugin was not started.
type ChecksumError struct {
	Plugin   string
	Path     string
	LockFile string
	Locked   string
	Actual   string
	// Relock is the command that pins the binary as it is now.
	Relock string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("plugin %q refused: %s has SHA-256 %s, but %s pins %s. "+
		"If you changed the binary on purpose, re-lock it with `%s`; otherwise it was tampered with",
		e.Plugin, e.Path, e.Actual, e.LockFile, e.Locked, e.Relock)
}
