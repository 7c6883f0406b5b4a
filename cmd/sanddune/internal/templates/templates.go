// Package templates holds what `sanddune init` writes into .sanddune/: the
// templates (each a sanddune.hcl pipeline and its prompt files, embedded),
// the sandbox image's Dockerfile, and the backlog managers that fill the
// templates' prompts and the Dockerfile.
//
// Template files are plain text with init keys ({{AGENT}}, {{MODEL}},
// {{LIST_TASKS_COMMAND}}, ...) that Render replaces. Every other {{KEY}}
// is left for the prompt's own arguments at run time.
package templates

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed all:files
var files embed.FS

// Template is one starter pipeline.
type Template struct {
	Name        string
	Description string
	// Backlog says its prompts read issues from a backlog manager.
	Backlog bool
}

// Templates are the templates init offers, in the order it offers them.
var Templates = []Template{
	{"blank", "Bare scaffold: one run and a prompt to write yourself", false},
	{"simple-loop", "Picks issues one by one, implements and closes them, in a loop", true},
	{"sequential-reviewer", "Implements an issue, then reviews it, in one session", true},
	{"parallel-planner", "Plans independent issues, implements each on its own branch in parallel, then merges", true},
	{"parallel-planner-with-review", "The same, with a review of each branch before the merge", true},
}

// UsesBacklog says whether the template named name needs a backlog manager.
func UsesBacklog(name string) bool {
	t, ok := find(Templates, func(t Template) string { return t.Name }, name)
	return !ok || t.Backlog
}

// Agent is an agent plugin init can install in the image.
type Agent struct {
	Name string
	// Package is the agent CLI's npm package, "" when it is not on npm.
	Package string
	// Model is the model init proposes.
	Model string
	// Install are the Dockerfile lines installing a CLI that is not on npm.
	Install string
	// Dir is the directory under the home where the CLI keeps its
	// sessions' directory, "" for none: made in the image by the agent
	// user, it spares every run the preparation of a home the image
	// lacks (the sessions are mounted below it).
	Dir string
}

// Agents are the agents init offers (their CLIs come from npm, but for
// cursor's).
var Agents = []Agent{
	{"claude", "@anthropic-ai/claude-code", "claude-opus-4-8", "", ".claude"},
	{"codex", "@openai/codex", "gpt-5.4", "", ".codex"},
	{"gemini", "@google/gemini-cli", "gemini-2.5-pro", "", ".gemini"},
	{"opencode", "opencode-ai", "opencode/big-pickle", "", ""},
	{"pi", "@mariozechner/pi-coding-agent", "claude-sonnet-4-6", "", ".pi/agent"},
	{"copilot", "@github/copilot", "gpt-5.4", "", ".copilot"},
	// Cursor's installer puts cursor-agent in $HOME/.local: here a home of
	// its own that the agent user can read.
	{"cursor", "", "auto", "RUN mkdir -p /opt/cursor && curl -fsS https://cursor.com/install | HOME=/opt/cursor bash \\\n" +
		" && ln -s /opt/cursor/.local/bin/cursor-agent /usr/local/bin/cursor-agent", ""},
}

// InstallLines are the Dockerfile lines installing the agent's CLI.
func (a Agent) InstallLines() string {
	if a.Install != "" {
		return a.Install
	}
	return "RUN npm install -g " + a.Package
}

// DirLines are the Dockerfile lines making Dir, as the agent user.
func (a Agent) DirLines() string {
	if a.Dir == "" {
		return ""
	}
	return "# The CLI's own directory, the agent's: a run need not prepare the home.\nRUN mkdir -p /home/agent/" + a.Dir
}

// Source says where the agent's CLI comes from, for init's choices.
func (a Agent) Source() string {
	if a.Package == "" {
		return "its vendor's installer"
	}
	return "npm " + a.Package
}

// Sandboxes are the sandbox plugins init offers: container engines that
// build the image from .sanddune/ (`sanddune <sandbox> build-image`).
var Sandboxes = []string{"docker", "podman"}

// Label is the GitHub label that marks issues for sanddune.
const Label = "sanddune"

// BacklogManager is where the agents find their issues: the commands they
// run in the sandbox, and what the image needs for them.
type BacklogManager struct {
	Name        string
	Description string
	// List prints the open issues as JSON (a prompt's shell expression).
	// With a label, "{{LABEL_FILTER}}" becomes " --label <label>".
	List string
	// View and Close take the issue id in place of "<ID>".
	View, Close string
	// Tools are Dockerfile lines installing the manager's CLI.
	Tools string
	// Env are the .env.example entries the CLI needs, with comments.
	Env string
}

// BacklogManagers are the backlog managers init offers.
var BacklogManagers = []BacklogManager{
	{
		Name:        "github-issues",
		Description: "GitHub issues, through the gh CLI in the sandbox",
		List:        "gh issue list --state open{{LABEL_FILTER}} --limit 100 --json number,title,body",
		View:        "gh issue view <ID> --comments",
		Close:       `gh issue close <ID> --comment "Completed by sanddune"`,
		Tools:       "# gh (above) reads GH_TOKEN from .sanddune/.env.",
		Env:         "# The GitHub CLI in the sandbox: a token that can read and close the repo's issues.\nGH_TOKEN=\n",
	},
	{
		Name:        "beads",
		Description: "Beads (bd), the issue tracker kept in the repository",
		List:        "bd ready --json",
		View:        "bd show <ID>",
		Close:       `bd close <ID> --reason "Completed by sanddune"`,
		Tools:       "# Beads, the bd CLI.\nRUN npm install -g @beads/bd",
	},
	{
		Name:        Custom,
		Description: "your own tracker, through the commands you name (run in the sandbox)",
		Tools:       "# The custom backlog manager's CLI: install it here, so the prompts' commands run.",
	},
}

// Custom is the backlog manager whose commands the user names.
const Custom = "custom"

// Commands are a custom backlog manager's commands.
type Commands struct{ List, View, Close string }

// CheckCommand checks that a custom command fits in a prompt's
// !`command`: one line, no backquote.
func CheckCommand(cmd string) error {
	if strings.ContainsAny(cmd, "`\n") {
		return errors.New("a command goes into the prompts as !`command`: one line without backquotes")
	}
	return nil
}

// CheckIDCommand checks a command viewing or closing an issue: CheckCommand,
// and it says where the id goes.
func CheckIDCommand(cmd string) error {
	if err := CheckCommand(cmd); err != nil {
		return err
	}
	if !strings.Contains(cmd, "<ID>") {
		return errors.New("put <ID> where the issue's id goes (e.g. tracker show <ID>)")
	}
	return nil
}

// Options are the choices init made.
type Options struct {
	Template       string
	Agent          string
	Model          string
	Sandbox        string
	ImageName      string
	BacklogManager string
	// Label filters the issue list on the sanddune label (github-issues).
	Label bool
	// Commands are the custom backlog manager's commands.
	Commands Commands
	// Credentials are the agent's credential alternatives, as its plugin
	// describes them: one group per credential, any key of a group will do.
	Credentials [][]string
}

// File is one file to write under .sanddune/.
type File struct {
	Path    string // slash-separated, relative to .sanddune/
	Content []byte
}

// Render returns the files of o.Template for o's choices, sorted by path.
func Render(o Options) ([]File, error) {
	if !slices.ContainsFunc(Templates, func(t Template) bool { return t.Name == o.Template }) {
		return nil, fmt.Errorf("unknown template %q; available: %s", o.Template, strings.Join(TemplateNames(), ", "))
	}
	agent, ok := find(Agents, func(a Agent) string { return a.Name }, o.Agent)
	if !ok {
		return nil, fmt.Errorf("unknown agent %q; available: %s", o.Agent, strings.Join(AgentNames(), ", "))
	}
	if !slices.Contains(Sandboxes, o.Sandbox) {
		return nil, fmt.Errorf("unknown sandbox %q; available: %s", o.Sandbox, strings.Join(Sandboxes, ", "))
	}
	bm, ok := find(BacklogManagers, func(b BacklogManager) string { return b.Name }, o.BacklogManager)
	if !ok && (o.BacklogManager != "" || UsesBacklog(o.Template)) {
		return nil, fmt.Errorf("unknown backlog manager %q; available: %s", o.BacklogManager, strings.Join(BacklogManagerNames(), ", "))
	}
	if bm.Name == Custom {
		if err := CheckCommand(o.Commands.List); err != nil || o.Commands.List == "" {
			return nil, fmt.Errorf("custom backlog manager: the command listing the issues %q: %v", o.Commands.List, err)
		}
		for _, c := range []string{o.Commands.View, o.Commands.Close} {
			if err := CheckIDCommand(c); err != nil {
				return nil, fmt.Errorf("custom backlog manager command %q: %w", c, err)
			}
		}
		bm.List, bm.View, bm.Close = o.Commands.List, o.Commands.View, o.Commands.Close
	}
	filter := ""
	if o.Label {
		filter = " --label " + Label
	}
	r := strings.NewReplacer(
		"{{AGENT}}", o.Agent,
		"{{MODEL}}", o.Model,
		"{{SANDBOX}}", o.Sandbox,
		"{{IMAGE_NAME}}", o.ImageName,
		"{{AGENT_INSTALL}}", agent.InstallLines(),
		"{{AGENT_DIRS}}", agent.DirLines(),
		"{{BACKLOG_MANAGER_TOOLS}}", bm.Tools,
		"{{LIST_TASKS_COMMAND}}", strings.ReplaceAll(bm.List, "{{LABEL_FILTER}}", filter),
		"{{VIEW_TASK_COMMAND}}", bm.View,
		"{{VIEW_ISSUE_COMMAND}}", strings.ReplaceAll(bm.View, "<ID>", "{{ISSUE_ID}}"),
		"{{CLOSE_TASK_COMMAND}}", bm.Close,
	)
	var out []File
	dir := path.Join("files", o.Template)
	err := fs.WalkDir(files, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, File{Path: strings.TrimPrefix(p, dir+"/"), Content: []byte(r.Replace(string(b)))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	image := "Dockerfile"
	if o.Sandbox == "podman" {
		image = "Containerfile"
	}
	df, err := files.ReadFile("files/Dockerfile")
	if err != nil {
		return nil, err
	}
	out = append(out,
		File{Path: image, Content: []byte(r.Replace(string(df)))},
		File{Path: ".gitignore", Content: []byte(".env\nlogs/\nworktrees/\npatches/\n")},
		File{Path: ".env.example", Content: []byte(envExample(o.Agent, o.Credentials, bm))},
	)
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// envExample lists the agent's credentials (the first key of each group
// set, its alternatives commented out) and the backlog manager's env.
func envExample(agent string, creds [][]string, bm BacklogManager) string {
	var b strings.Builder
	b.WriteString("# Copy to .sanddune/.env and fill in. A key left empty there takes its value\n# from your environment; .env is never committed (.gitignore).\n")
	for _, group := range creds {
		if len(group) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n# The %s agent's credential", agent)
		if len(group) > 1 {
			b.WriteString(": one of these")
		}
		fmt.Fprintf(&b, ".\n%s=\n", group[0])
		for _, k := range group[1:] {
			fmt.Fprintf(&b, "# %s=\n", k)
		}
	}
	if bm.Env != "" {
		b.WriteString("\n" + bm.Env)
	}
	return b.String()
}

func find[T any](list []T, name func(T) string, want string) (T, bool) {
	for _, x := range list {
		if name(x) == want {
			return x, true
		}
	}
	var zero T
	return zero, false
}

func names[T any](list []T, name func(T) string) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = name(x)
	}
	return out
}

// TemplateNames, AgentNames and BacklogManagerNames list what init offers.
func TemplateNames() []string { return names(Templates, func(t Template) string { return t.Name }) }
func AgentNames() []string    { return names(Agents, func(a Agent) string { return a.Name }) }
func BacklogManagerNames() []string {
	return names(BacklogManagers, func(b BacklogManager) string { return b.Name })
}

// FindAgent returns the agent named name.
func FindAgent(name string) (Agent, bool) {
	return find(Agents, func(a Agent) string { return a.Name }, name)
}
