package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// The two published modules: sanddune (the repository root, tagged vX.Y.Z)
// and its SDK (sdk/, tagged sdk/vX.Y.Z).
const (
	rootPath = "github.com/missingstudio/sanddune"
	sdkPath  = rootPath + "/sdk"
)

// publish writes the checkout's SDK and root module at version into the
// file proxy at dir (GOPROXY=file://dir), as tags of one commit would
// publish them: the root's go.mod requires the SDK at version and its
// go.sum carries that SDK's hashes, as the release commit has them. It
// returns the SDK's go.sum lines.
func publish(root, dir, version string) ([]string, error) {
	sum, err := publishSDK(root, dir, version)
	if err != nil {
		return nil, err
	}
	gomod, gosum, err := releaseFiles(filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"), version, sum)
	if err != nil {
		return nil, err
	}
	files, err := moduleFiles(root, ".", map[string][]byte{"go.mod": gomod, "go.sum": gosum})
	if err != nil {
		return nil, err
	}
	_, err = writeModule(dir, module.Version{Path: rootPath, Version: version}, files, gomod, commitTime(root))
	return sum, err
}

// publishSDK writes the checkout's SDK at version into the file proxy at
// dir and returns its go.sum lines.
func publishSDK(root, dir, version string) ([]string, error) {
	files, err := moduleFiles(root, "sdk", nil)
	if err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "sdk", "go.mod"))
	if err != nil {
		return nil, err
	}
	return writeModule(dir, module.Version{Path: sdkPath, Version: version}, files, gomod, commitTime(root))
}

// releaseFiles returns a go.mod requiring the SDK at version and the
// go.sum beside it with the SDK's lines (sum) in place of any it had.
func releaseFiles(gomodPath, gosumPath, version string, sum []string) (gomod, gosum []byte, err error) {
	data, err := os.ReadFile(gomodPath)
	if err != nil {
		return nil, nil, err
	}
	f, err := modfile.Parse(gomodPath, data, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := f.AddRequire(sdkPath, version); err != nil {
		return nil, nil, err
	}
	if err := f.DropReplace(sdkPath, ""); err != nil {
		return nil, nil, err
	}
	f.Cleanup()
	if gomod, err = f.Format(); err != nil {
		return nil, nil, err
	}
	old, err := os.ReadFile(gosumPath)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	return gomod, withSum(withoutSDK(old), sum), nil
}

// withoutSDK drops the SDK's lines from a go.sum.
func withoutSDK(gosum []byte) []byte {
	var out []byte
	for line := range bytes.Lines(gosum) {
		if !bytes.HasPrefix(line, []byte(sdkPath+" ")) {
			out = append(out, line...)
		}
	}
	return out
}

// withSum adds lines to a go.sum, in the go command's order (module.Sort:
// path, then semver, "/go.mod" after the module's own line).
func withSum(gosum []byte, lines []string) []byte {
	byMod := map[module.Version]string{}
	var mods []module.Version
	for _, l := range append(strings.Split(string(gosum), "\n"), lines...) {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		m := module.Version{Path: f[0], Version: f[1]}
		if _, dup := byMod[m]; !dup {
			mods = append(mods, m)
		}
		byMod[m] = l
	}
	module.Sort(mods)
	var out strings.Builder
	for _, m := range mods {
		out.WriteString(byMod[m] + "\n")
	}
	return []byte(out.String())
}

// writeModule writes m's .info, .mod and .zip (from files) under dir in the
// GOPROXY layout, adds it to the version list, and returns its go.sum
// lines.
func writeModule(dir string, m module.Version, files []modzip.File, gomod []byte, t time.Time) ([]string, error) {
	ep, err := module.EscapePath(m.Path)
	if err != nil {
		return nil, err
	}
	ev, err := module.EscapeVersion(m.Version)
	if err != nil {
		return nil, err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(ep), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(vdir, ev)
	zf, err := os.Create(base + ".zip")
	if err != nil {
		return nil, err
	}
	err = modzip.Create(zf, m, files)
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("zip %s@%s: %w", m.Path, m.Version, err)
	}
	if _, err := modzip.CheckZip(m, base+".zip"); err != nil {
		return nil, fmt.Errorf("zip %s@%s: %w", m.Path, m.Version, err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, t.UTC()})
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
		return nil, err
	}
	list, _ := os.ReadFile(filepath.Join(vdir, "list"))
	if !slices.Contains(strings.Fields(string(list)), m.Version) {
		list = append(list, m.Version+"\n"...)
	}
	if err := os.WriteFile(filepath.Join(vdir, "list"), list, 0o644); err != nil {
		return nil, err
	}
	h1, err := dirhash.HashZip(base+".zip", dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	modh1, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return nil, err
	}
	return []string{m.Path + " " + m.Version + " " + h1, m.Path + " " + m.Version + "/go.mod " + modh1}, nil
}

// moduleFiles lists the module in dir (relative to the repository root)
// as a commit of the working tree would hold it: the files git tracks or
// would add (not ignored), minus deleted ones, with override's contents in
// place of those files'. modzip.Create leaves out nested modules.
func moduleFiles(root, dir string, override map[string][]byte) ([]modzip.File, error) {
	out, err := gitOut(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", dir)
	if err != nil {
		return nil, err
	}
	var files []modzip.File
	seen := map[string]bool{}
	for p := range strings.SplitSeq(out, "\x00") {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		rel := p
		if dir != "." {
			rel = strings.TrimPrefix(p, dir+"/")
		}
		if data, ok := override[rel]; ok {
			files = append(files, dataFile{rel, data})
			continue
		}
		full := filepath.Join(root, p)
		fi, err := os.Lstat(full)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		files = append(files, diskFile{rel, full, fi})
	}
	for rel, data := range override {
		if !seen[filepath.ToSlash(filepath.Join(dir, rel))] {
			files = append(files, dataFile{rel, data})
		}
	}
	return files, nil
}

type diskFile struct {
	rel, full string
	fi        os.FileInfo
}

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.fi, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }

type dataFile struct {
	rel  string
	data []byte
}

func (f dataFile) Path() string                 { return f.rel }
func (f dataFile) Lstat() (os.FileInfo, error)  { return dataInfo(f), nil }
func (f dataFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type dataInfo dataFile

func (i dataInfo) Name() string       { return filepath.Base(i.rel) }
func (i dataInfo) Size() int64        { return int64(len(i.data)) }
func (i dataInfo) Mode() os.FileMode  { return 0o644 }
func (i dataInfo) ModTime() time.Time { return time.Time{} }
func (i dataInfo) IsDir() bool        { return false }
func (i dataInfo) Sys() any           { return nil }

// repoRoot is the top of the git work tree holding the current directory.
func repoRoot() (string, error) {
	return gitOut(".", "rev-parse", "--show-toplevel")
}

// commitTime is HEAD's commit time (a zero time outside git).
func commitTime(root string) time.Time {
	s, err := gitOut(root, "log", "-1", "--format=%ct")
	var sec int64
	if err == nil {
		fmt.Sscan(s, &sec)
	}
	return time.Unix(sec, 0)
}

// gitOut runs git in dir and returns its output, trimmed of the last newline.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}
