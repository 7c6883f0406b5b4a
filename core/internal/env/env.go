// Package env resolves the environment a run's sandbox starts with.
//
// Layers, lowest precedence first:
//
//  1. the process environment;
//  2. <repo>/.sanddune/.env;
//  3. the agent provider's env together with the sandbox provider's env
//     (they must not share a key: neither provider owns it);
//  4. the run's env.
//
// The process environment is a fallback, not a dump: only keys some layer
// asks for come from it (keys declared in .sanddune/.env, possibly with an
// empty value, and the agent's required credential keys). The rest of the
// host's environment (PATH, HOME, SSH_AUTH_SOCK...) never enters a sandbox.
//
// Errors name keys, never values.
package env

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/joho/godotenv"

	"github.com/missingstudio/sanddune/core/internal/textfile"
	"github.com/missingstudio/sanddune/sdk"
)

// Layers are a run's env sources.
type Layers struct {
	// Lookup reads the process environment (os.LookupEnv when nil).
	Lookup func(key string) (string, bool)
	// DotEnv is the parsed .sanddune/.env (see ReadFile).
	DotEnv map[string]string
	// Agent and Sandbox are the providers' env; they must be disjoint.
	Agent   map[string]string
	Sandbox map[string]string
	// Run is the run's env; it may override anything.
	Run map[string]string
	// Required lists credential alternatives: every group needs one
	// non-empty key in the result.
	Required [][]string
}

// OverlapError is agent and sandbox provider env sharing keys.
type OverlapError struct{ Keys []string }

func (e *OverlapError) Error() string {
	return "agent provider and sandbox provider env both set " + strings.Join(e.Keys, ", ") +
		": set each key in one provider block only, or in the run's env"
}

// MissingError is required env that no layer provides.
type MissingError struct {
	// Groups are the unsatisfied groups; each needs one of its keys.
	Groups [][]string
}

func (e *MissingError) Error() string {
	parts := make([]string, len(e.Groups))
	for i, g := range e.Groups {
		parts[i] = strings.Join(g, " or ")
	}
	return "missing required env: " + strings.Join(parts, "; ") +
		" (export it, add it to .sanddune/.env, or set it in the run's env)"
}

// MaxFileSize bounds a dotenv file.
const MaxFileSize = 1 << 20

// ReadFile parses a dotenv file (a regular file of at most MaxFileSize
// bytes) and checks its names; a missing file is an empty map. A syntax
// error names its line.
func ReadFile(path string) (map[string]string, error) {
	data, err := textfile.Read(path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	m, err := godotenv.UnmarshalBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: not a KEY=value line", path, badLine(data))
	}
	if err := Check(m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// badLine is the line of a dotenv file that does not parse: the one after
// the longest start of the file that does (a quoted value may span lines).
func badLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k := len(lines) - 1; k > 0; k-- {
		if _, err := godotenv.UnmarshalBytes(bytes.Join(lines[:k], nil)); err == nil {
			return k + 1
		}
	}
	return 1
}

// Resolve merges the layers and checks the required keys.
func Resolve(l Layers) (map[string]string, error) {
	var overlap []string
	for k := range l.Agent {
		if _, ok := l.Sandbox[k]; ok {
			overlap = append(overlap, k)
		}
	}
	if len(overlap) > 0 {
		sort.Strings(overlap)
		return nil, &OverlapError{Keys: overlap}
	}
	lookup := l.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out := map[string]string{}
	fromProcess := func(k string) {
		if v, ok := lookup(k); ok && v != "" {
			out[k] = v
		}
	}
	for k := range l.DotEnv {
		fromProcess(k)
	}
	for _, g := range l.Required {
		for _, k := range g {
			fromProcess(k)
		}
	}
	for k, v := range l.DotEnv {
		if v != "" { // an empty value defers to the process env
			out[k] = v
		}
	}
	for _, layer := range []map[string]string{l.Agent, l.Sandbox, l.Run} {
		for k, v := range layer {
			out[k] = v
		}
	}
	if err := Check(out); err != nil {
		return nil, err
	}
	if err := CheckRequired(out, l.Required); err != nil {
		return nil, err
	}
	return out, nil
}

// Limits of what a process can be given as its environment (Linux): one
// "KEY=value" string stops at MAX_ARG_STRLEN (128 KiB, with its NUL), and
// all of them share ARG_MAX with the command line, so the total is kept
// well below it.
const (
	MaxVar   = 128<<10 - 1
	MaxTotal = 1 << 20
)

// InvalidError lists env entries no process can be started with. It names
// keys, never values.
type InvalidError struct{ Problems []string }

func (e *InvalidError) Error() string {
	return "invalid env: " + strings.Join(e.Problems, "; ")
}

// Check reports keys that are not variable names (letters, digits and _,
// not starting with a digit), values holding a NUL byte, and entries or a
// total past what exec accepts: what the sandbox's first command would
// otherwise fail on.
func Check(vars map[string]string) error {
	var problems []string
	for _, k := range Keys(vars) {
		if p, _ := Problem(k, vars[k]); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return &InvalidError{Problems: problems}
	}
	total := 0
	for k, v := range vars {
		total += len(k) + 1 + len(v) + 1
	}
	if total > MaxTotal {
		return &InvalidError{Problems: []string{fmt.Sprintf("the variables add up to %d bytes; at most %d (1 MiB) can be passed", total, MaxTotal)}}
	}
	return nil
}

// Problem is what no process can be started with in KEY=v ("" when
// nothing); ofName says it is the key's, not the value's. The total size
// is Check's, in the merged env (Resolve).
func Problem(k, v string) (problem string, ofName bool) {
	if ds := sdk.CheckEnv(map[string]string{k: v}, ""); len(ds) > 0 {
		return ds[0].Detail, true
	}
	switch {
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Sprintf("the value of %s contains a NUL byte", k), false
	case len(k)+1+len(v) > MaxVar:
		return fmt.Sprintf("the value of %s is %d bytes; a variable holds at most %d (KiB: %d)", k, len(v), MaxVar-len(k)-1, MaxVar>>10), false
	}
	return "", false
}

// CheckRequired fails when a group has no non-empty key in env.
func CheckRequired(env map[string]string, groups [][]string) error {
	var missing [][]string
	for _, g := range groups {
		ok := len(g) == 0
		for _, k := range g {
			if env[k] != "" {
				ok = true
				break
			}
		}
		if !ok {
			missing = append(missing, g)
		}
	}
	if len(missing) > 0 {
		return &MissingError{Groups: missing}
	}
	return nil
}

// Keys returns the sorted keys of an env map (for logs: never values).
func Keys(env map[string]string) []string {
	ks := make([]string, 0, len(env))
	for k := range env {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
