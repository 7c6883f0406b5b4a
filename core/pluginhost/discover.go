package pluginhost

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BinaryPrefix starts the file name of every external plugin binary.
const BinaryPrefix = "sanddune-plugin-"

// Source is where a plugin is served from.
type Source struct {
	// Name is the plugin name (the binary's suffix or the built-in's name).
	Name string
	// Path is the external binary; empty for a built-in.
	Path string
	// Shadows is set when an external binary replaces a built-in of the
	// same name (only when the config asks for it by source).
	Shadows bool
	// Trusted is set when the binary lies where the user put it (not in
	// the repository, not named by the config), so it needs no trust.
	Trusted bool
}

// Builtin reports whether the source is a built-in, served by a binary
// installed with sanddune.
func (s Source) Builtin() bool { return s.Path == "" }

func (s Source) String() string {
	if s.Builtin() {
		return "built-in"
	}
	return s.Path
}

// SearchDirs returns the directories searched for external plugins, in order.
func SearchDirs(repoRoot string, getenv func(string) string, selfExe string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(getenv("SANDDUNE_PLUGIN_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if repoRoot != "" {
		dirs = append(dirs, filepath.Join(repoRoot, ".sanddune", "plugins"))
	}
	if data := dataHome(getenv); data != "" {
		dirs = append(dirs, filepath.Join(data, "sanddune", "plugins"))
	}
	if selfExe != "" {
		dirs = append(dirs, filepath.Dir(selfExe))
	}
	return dirs
}

func dataHome(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return d
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share")
	}
	return ""
}

// findBinary returns the first sanddune-plugin-<name> file in dirs,
// executable or not (starting a non-executable one says how to fix it).
func findBinary(dirs []string, name string) string {
	for _, d := range dirs {
		p := filepath.Join(d, BinaryPrefix+name)
		if isFile(p) {
			return p
		}
	}
	return ""
}

// listBinaries returns every plugin binary in dirs, first occurrence of a
// name winning, sorted by name.
func listBinaries(dirs []string) []Source {
	seen := map[string]bool{}
	var out []Source
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), BinaryPrefix)
			if !ok || name == "" || seen[name] {
				continue
			}
			p := filepath.Join(d, e.Name())
			if !isFile(p) {
				continue
			}
			seen[name] = true
			out = append(out, Source{Name: name, Path: p})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().Perm()&0o111 != 0
}

// candidates lists the plugin names that may serve a type label, most
// specific first: "acme-vm" -> ["acme-vm", "acme"].
func candidates(label string) []string {
	out := []string{label}
	for i := strings.LastIndexByte(label, '-'); i > 0; i = strings.LastIndexByte(label[:i], '-') {
		out = append(out, label[:i])
	}
	return out
}
