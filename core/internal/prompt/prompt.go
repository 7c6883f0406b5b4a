// Package prompt turns a run's prompt (inline text or a prompt file) into
// the text handed to the agent each iteration.
//
// An inline prompt is passed literally. A prompt file is a template, handled
// in three stages:
//
//  1. Load (host, before anything starts): read the file, split it into text
//     and shell expressions (!`command`), and check the {{KEY}} placeholders
//     against the prompt arguments: a missing key or an argument named like a
//     built-in is an error (an interactive session asks for the value
//     instead, see Source.Ask), an unused argument a warning.
//  2. Fill (host, once the run's branches are known): substitute the
//     arguments and the built-ins SOURCE_BRANCH and TARGET_BRANCH.
//  3. Render (inside the sandbox, every iteration): run the shell
//     expressions in parallel and splice their output in.
//
// Argument values are data, never code: text segments get the value
// verbatim and are never scanned again, so a value containing !`...` stays
// inert; inside a shell expression a placeholder becomes a quoted shell
// variable (SANDDUNE_ARG_<KEY>) passed in the command's environment, so the
// value is never parsed by the shell.
package prompt

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/missingstudio/sanddune/core/internal/textfile"
)

// Built-in prompt arguments. Branches and Conflicts are those of a run
// with merge_branches (Source.MergeArgs).
const (
	SourceBranch = "SOURCE_BRANCH"
	TargetBranch = "TARGET_BRANCH"
	Branches     = "BRANCHES"
	Conflicts    = "CONFLICTS"
)

// EnvPrefix prefixes the environment variables carrying argument values
// into shell expressions.
const EnvPrefix = "SANDDUNE_ARG_"

// argName is what a placeholder's name may be.
const argName = `[A-Za-z_][A-Za-z0-9_]*`

var (
	placeholderRE = regexp.MustCompile(`\{\{\s*(` + argName + `)\s*\}\}`)
	argNameRE     = regexp.MustCompile(`^` + argName + `$`)
	shellRE       = regexp.MustCompile("!`([^`]+)`")
)

// ValidArgName reports whether a prompt argument can be used: whether
// {{name}} is a placeholder.
func ValidArgName(name string) bool { return argNameRE.MatchString(name) }

// Source is where a run's prompt comes from. Exactly one of Inline and File
// is set (or neither, when Optional); File resolves against BaseDir when
// relative.
type Source struct {
	Inline  string
	File    string
	BaseDir string
	// Optional allows no prompt at all (an interactive session opens the
	// agent's TUI with none).
	Optional bool
	Args     map[string]string
	// Ask, when set, supplies the value of a placeholder that Args lacks
	// (an interactive session asks the user at the terminal); it is called
	// once per missing key, in the order the keys appear.
	Ask func(key string) (string, error)
	// MergeArgs makes BRANCHES and CONFLICTS built-ins (a run with
	// merge_branches): filled at run time, not settable in Args.
	MergeArgs bool
}

// Error is a prompt problem detected before the run starts.
type Error struct {
	File string // the prompt file, empty for inline prompts
	Msg  string
}

func (e *Error) Error() string {
	if e.File == "" {
		return "prompt: " + e.Msg
	}
	return fmt.Sprintf("prompt file %s: %s", e.File, e.Msg)
}

// Template is a loaded prompt whose arguments have been checked.
type Template struct {
	// File is the absolute prompt file path; empty for an inline prompt.
	File string
	// Warnings are non-fatal findings (unused arguments).
	Warnings []string

	inline string
	segs   []segment
	args   map[string]string
}

type segment struct {
	text  string // literal text with placeholders
	shell bool   // text is a shell expression (without !` `)
}

// MaxFileSize bounds a prompt file.
const MaxFileSize = 1 << 20

// Load resolves and checks a prompt source.
func Load(src Source) (*Template, error) {
	switch {
	case src.Inline != "" && src.File != "":
		return nil, &Error{Msg: "set exactly one of prompt and prompt_file, not both"}
	case src.Inline == "" && src.File == "" && src.Optional:
		if len(src.Args) > 0 {
			return nil, &Error{Msg: "prompt_args without a prompt_file: they fill a prompt file's {{KEY}} placeholders"}
		}
		return &Template{}, nil
	case src.Inline == "" && src.File == "":
		return nil, &Error{Msg: `set one of prompt = "..." or prompt_file = "path/to/prompt.md"`}
	case src.Inline != "":
		if len(src.Args) > 0 {
			return nil, &Error{Msg: "prompt_args only work with prompt_file: an inline prompt is passed to the agent as is; interpolate values directly, or move the prompt to a file to use {{KEY}} placeholders"}
		}
		return &Template{inline: src.Inline}, nil
	}
	path := src.File
	if !filepath.IsAbs(path) {
		base := src.BaseDir
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, &Error{File: path, Msg: err.Error()}
			}
			base = wd
		}
		path = filepath.Join(base, path)
	}
	data, err := textfile.Read(path, MaxFileSize)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: path, Msg: "cannot read it: " + err.Error()}
	}
	builtins := []string{SourceBranch, TargetBranch}
	if src.MergeArgs {
		builtins = append(builtins, Branches, Conflicts)
	}
	return parse(path, string(data), src.Args, src.Ask, builtins)
}

func parse(file, text string, args map[string]string, ask func(string) (string, error), builtins []string) (*Template, error) {
	t := &Template{File: file, args: args}
	last := 0
	for _, m := range shellRE.FindAllStringSubmatchIndex(text, -1) {
		if m[0] > last {
			t.segs = append(t.segs, segment{text: text[last:m[0]]})
		}
		t.segs = append(t.segs, segment{text: text[m[2]:m[3]], shell: true})
		last = m[1]
	}
	if last < len(text) {
		t.segs = append(t.segs, segment{text: text[last:]})
	}

	for _, b := range builtins {
		if _, ok := args[b]; ok {
			return nil, &Error{File: file, Msg: fmt.Sprintf("%q is a built-in prompt argument and cannot be set in prompt_args", b)}
		}
	}
	used := map[string]bool{}
	asked := false
	for _, s := range t.segs {
		for _, m := range placeholderRE.FindAllStringSubmatch(s.text, -1) {
			key := m[1]
			if used[key] {
				continue
			}
			used[key] = true
			if _, ok := t.args[key]; ok || slices.Contains(builtins, key) {
				continue
			}
			if ask == nil {
				return nil, &Error{File: file, Msg: fmt.Sprintf("placeholder {{%s}} has no value in prompt_args", key)}
			}
			v, err := ask(key)
			if err != nil {
				return nil, &Error{File: file, Msg: fmt.Sprintf("placeholder {{%s}} has no value in prompt_args, and asking for it failed: %v", key, err)}
			}
			if !asked { // args is the caller's: add to a copy
				t.args, asked = maps.Clone(args), true
				if t.args == nil {
					t.args = map[string]string{}
				}
			}
			t.args[key] = v
		}
	}
	var unused []string
	for k := range args {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	for _, k := range unused {
		t.Warnings = append(t.Warnings, fmt.Sprintf("prompt argument %q is set but not used in %s", k, file))
	}
	return t, nil
}

// Inline reports whether the prompt is inline (passed literally).
func (t *Template) Inline() bool { return t.File == "" }

// Mentions reports whether the prompt's own text, its arguments filled
// in, contains s; shell expressions (run later, in the sandbox) are not
// searched.
func (t *Template) Mentions(s string) bool {
	for _, p := range t.Fill("", "", nil).parts {
		if !p.shell && strings.Contains(p.text, s) {
			return true
		}
	}
	return false
}

// Fill substitutes the arguments and the built-ins into the template;
// more are further built-ins (BRANCHES, CONFLICTS).
func (t *Template) Fill(sourceBranch, targetBranch string, more map[string]string) *Prompt {
	if t.Inline() {
		return &Prompt{parts: []part{{text: t.inline}}}
	}
	vals := make(map[string]string, len(t.args)+2)
	for k, v := range t.args {
		vals[k] = v
	}
	vals[SourceBranch] = sourceBranch
	vals[TargetBranch] = targetBranch
	maps.Copy(vals, more)

	p := &Prompt{}
	for _, s := range t.segs {
		if !s.shell {
			text := placeholderRE.ReplaceAllStringFunc(s.text, func(m string) string {
				return vals[placeholderRE.FindStringSubmatch(m)[1]]
			})
			p.parts = append(p.parts, part{text: text})
			continue
		}
		cmd, keys := quotePlaceholders(s.text)
		var env map[string]string
		if len(keys) > 0 {
			env = make(map[string]string, len(keys))
			for _, k := range keys {
				env[EnvPrefix+k] = vals[k]
			}
		}
		p.parts = append(p.parts, part{shell: true, expr: s.text, cmd: cmd, env: env})
	}
	return p
}

// quotePlaceholders replaces every placeholder of a shell command by a
// reference to its environment variable, quoted for where it stands:
// "${V}" unquoted, ${V} inside double quotes, '"${V}"' inside single quotes.
// The variable's value is never parsed as shell code.
func quotePlaceholders(cmd string) (string, []string) {
	matches := placeholderRE.FindAllStringSubmatchIndex(cmd, -1)
	if len(matches) == 0 {
		return cmd, nil
	}
	const (
		unquoted = iota
		single
		double
	)
	var b strings.Builder
	var keys []string
	seen := map[string]bool{}
	state, i, mi := unquoted, 0, 0
	for i < len(cmd) {
		if mi < len(matches) && i == matches[mi][0] {
			m := matches[mi]
			key := cmd[m[2]:m[3]]
			if !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
			ref := "${" + EnvPrefix + key + "}"
			switch state {
			case unquoted:
				b.WriteString(`"` + ref + `"`)
			case double:
				b.WriteString(ref)
			case single:
				b.WriteString(`'"` + ref + `"'`)
			}
			i = m[1]
			mi++
			continue
		}
		c := cmd[i]
		b.WriteByte(c)
		i++
		switch {
		case c == '\\' && state != single && i < len(cmd) && (mi >= len(matches) || i != matches[mi][0]):
			b.WriteByte(cmd[i])
			i++
		case c == '\'' && state == unquoted:
			state = single
		case c == '\'' && state == single:
			state = unquoted
		case c == '"' && state == unquoted:
			state = double
		case c == '"' && state == double:
			state = unquoted
		}
	}
	return b.String(), keys
}
