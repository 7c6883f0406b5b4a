package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/cmd/sanddune/internal/ask"
	"github.com/missingstudio/sanddune/cmd/sanddune/internal/templates"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/sdk"
)

// configDirName is the directory init writes at the repo root.
const configDirName = ".sanddune"

// initFlags are init's answers given on the command line; a flag not
// given is asked for on a terminal.
type initFlags struct {
	agent, model, sandbox, template, backlog, imageName string
	createLabel, buildImage                             bool
	// list, view and close are the commands of a custom backlog manager.
	list, view, close string
}

func newInitCommand(g *globals) *cobra.Command {
	f := &initFlags{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write .sanddune/: a config from a template, its prompts, the sandbox image's Dockerfile",
		Long: `Write .sanddune/ at the root of the repository: sanddune.hcl (a template's pipeline),
its prompt files, the sandbox image's Dockerfile (Containerfile for podman), .env.example
with the agent's credential keys, and .gitignore. Refuses when one of these files exists
(what sanddune keeps in .sanddune, such as logs and preserved worktrees, stays as it is).

On a terminal, init asks for what its flags do not say; without one, the missing flags are
one error naming them all (blank needs no --issue-tracker). Outside a git repository init
refuses. Templates: ` + strings.Join(templates.TemplateNames(), ", ") + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInit(cmd, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.agent, "agent", "", "agent: "+strings.Join(templates.AgentNames(), ", "))
	fl.StringVar(&f.model, "model", "", "model (default: the agent's, e.g. "+templates.Agents[0].Model+" for "+templates.Agents[0].Name+")")
	fl.StringVar(&f.sandbox, "sandbox", "", "sandbox: "+strings.Join(templates.Sandboxes, ", "))
	fl.StringVar(&f.template, "template", "", "template: "+strings.Join(templates.TemplateNames(), ", "))
	fl.StringVar(&f.backlog, "issue-tracker", "", "backlog manager: "+strings.Join(templates.BacklogManagerNames(), ", "))
	fl.StringVar(&f.list, "list-command", "", "custom: the command that prints the open issues (run in the sandbox; JSON or text)")
	fl.StringVar(&f.view, "view-command", "", "custom: the command that shows one issue, with <ID> where its id goes")
	fl.StringVar(&f.close, "close-command", "", "custom: the command that closes one issue, with <ID> where its id goes")
	fl.BoolVar(&f.createLabel, "create-label", false, "github-issues: create the "+templates.Label+" label with gh and list only the issues carrying it")
	fl.BoolVar(&f.buildImage, "build-image", false, "build the sandbox image now")
	fl.StringVar(&f.imageName, "image-name", "", "image name (default sanddune:<repo-dir-name>)")
	return cmd
}

func runInit(cmd *cobra.Command, g *globals, f *initFlags) error {
	ctx := cmd.Context()
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repo, err := worktree.Open(ctx, wd)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s is not in a git repository: init writes %s/ at a repository's root, and runs work on its commits (git init first)", wd, configDirName)}
	}
	root := repo.Root
	dir := filepath.Join(root, configDirName)
	if cfg := filepath.Join(dir, "sanddune.hcl"); exists(cfg) {
		return refuseExisting(cfg)
	}
	q := &initAsker{flags: cmd.Flags(), tty: isatty.IsTerminal(os.Stdin.Fd()) || isatty.IsCygwinTerminal(os.Stdin.Fd())}
	if q.tty {
		q.p = ask.New(ctx, os.Stdin, cmd.ErrOrStderr())
	}
	o := templates.Options{ImageName: f.imageName}
	if o.ImageName == "" {
		o.ImageName = containerkit.DefaultImage(root)
	}
	if o.Agent, err = q.choose("agent", "Agent", f.agent, agentOptions()); err != nil {
		return err
	}
	if agent, ok := templates.FindAgent(o.Agent); ok { // no agent: named missing already
		if o.Model, err = q.input("model", "Model", f.model, agent.Model, nil); err != nil {
			return err
		}
	}
	if o.Sandbox, err = q.choose("sandbox", "Sandbox", f.sandbox, plainOptions(templates.Sandboxes)); err != nil {
		return err
	}
	if o.Template, err = q.choose("template", "Template", f.template, templateOptions()); err != nil {
		return err
	}
	// Without a terminal and a template, which backlog questions apply is
	// unknown: the template is the missing flag then.
	knownTemplate := o.Template != ""
	if knownTemplate && templates.UsesBacklog(o.Template) || cmd.Flags().Changed("issue-tracker") {
		if o.BacklogManager, err = q.choose("issue-tracker", "Backlog manager", f.backlog, backlogOptions()); err != nil {
			return err
		}
	}
	if o.BacklogManager == templates.Custom {
		if o.Commands, err = askCommands(q, f); err != nil {
			return err
		}
	} else if err := onlyWithCustom(cmd.Flags()); err != nil {
		return err
	}
	if o.BacklogManager == "github-issues" {
		if o.Label, err = q.confirm("create-label", fmt.Sprintf("Create the GitHub label %q and work only on issues carrying it?", templates.Label), f.createLabel); err != nil {
			return err
		}
	}
	build, err := q.confirm("build-image", fmt.Sprintf("Build the image %s now?", o.ImageName), f.buildImage)
	if err != nil {
		return err
	}
	if err := q.missingFlags(); err != nil {
		return err
	}

	if o.Credentials, err = agentCredentials(ctx, g, root, o.Agent, o.Model); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	files, err := templates.Render(o)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := writeConfigDir(dir, files); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	backlog := ""
	if o.BacklogManager != "" {
		backlog = ", backlog manager " + o.BacklogManager
	}
	fmt.Fprintf(out, "Wrote %s (template %s, agent %s, model %s, sandbox %s%s):\n", dir, o.Template, o.Agent, o.Model, o.Sandbox, backlog)
	for _, file := range files {
		fmt.Fprintf(out, "  %s\n", filepath.Join(configDirName, filepath.FromSlash(file.Path)))
	}
	if o.Label {
		createLabel(ctx, root, out)
	}
	if build {
		if err := buildInitImage(ctx, g, root, o); err != nil {
			return err
		}
	}
	nextSteps(out, o, build)
	return nil
}

// refuseExisting refuses a file init would write: it may be customised.
// (What sanddune keeps in .sanddune, such as logs and preserved worktrees,
// is never in the way: init writes beside it.)
func refuseExisting(path string) error {
	return &exitError{code: exitUsage, err: fmt.Errorf("%s already exists: init never overwrites a file it would write (your config, Dockerfile and prompts may be customised); move it aside to start again", path)}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// initAsker answers init's questions from the flags, else on the terminal.
// Without a terminal, it notes each question whose flag is missing (the
// answer is then empty or false): missingFlags reports them all at once.
type initAsker struct {
	p      *ask.Prompter // on the terminal; a signal ends it
	flags  interface{ Changed(string) bool }
	tty    bool
	missed []string // --flag=example
}

// missing notes a question that has no flag and no terminal to ask it on.
func (a *initAsker) missing(flag, example string) {
	a.missed = append(a.missed, "--"+flag+"="+example)
}

// missingFlags is the error naming every flag a question lacked.
func (a *initAsker) missingFlags() error {
	if len(a.missed) == 0 {
		return nil
	}
	var names []string
	for _, m := range a.missed {
		name, _, _ := strings.Cut(m, "=")
		names = append(names, name)
	}
	verb := "are"
	if len(names) == 1 {
		verb = "is"
	}
	note := ""
	if slices.Contains(names, "--template") {
		note = "; a template that reads issues needs --issue-tracker too"
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("%s %s required when stdin is not a terminal (e.g. %s)%s", strings.Join(names, ", "), verb, strings.Join(a.missed, " "), note)}
}

func (a *initAsker) choose(flag, title, value string, opts []ask.Option) (string, error) {
	names := make([]string, len(opts))
	for i, o := range opts {
		names[i] = o.Value
	}
	if a.flags.Changed(flag) {
		for _, n := range names {
			if n == value {
				return value, nil
			}
		}
		note := ""
		if flag == "sandbox" {
			note = " (init writes an image for a container engine; a bubblewrap or local sandbox needs none: write its block by hand, docs/providers.md)"
		}
		return "", &exitError{code: exitUsage, err: fmt.Errorf("--%s %q: want one of %s%s", flag, value, strings.Join(names, ", "), note)}
	}
	if !a.tty {
		a.missing(flag, names[0])
		return "", nil
	}
	v, err := a.p.Select(title, opts)
	return v, cancelled(err)
}

// input asks for a text; validate (may be nil) checks a flag's value and
// the terminal's answer alike, neither of which may be empty. Without a
// terminal, a question with no default is a missing flag.
func (a *initAsker) input(flag, title, value, def string, validate func(string) error) (string, error) {
	check := func(s string) error {
		if strings.TrimSpace(s) == "" {
			return errors.New("is empty")
		}
		if validate != nil {
			return validate(s)
		}
		return nil
	}
	if a.flags.Changed(flag) {
		if err := check(value); err != nil {
			return "", &exitError{code: exitUsage, err: fmt.Errorf("--%s %q: %w", flag, value, err)}
		}
		return value, nil
	}
	if !a.tty {
		if def == "" {
			a.missing(flag, "'…'")
		}
		return def, nil
	}
	v, err := a.p.Input(title, def, check)
	return v, cancelled(err)
}

// confirm asks a yes/no question; without a terminal its flag is opt-in
// (false unless given).
func (a *initAsker) confirm(flag, title string, value bool) (bool, error) {
	if a.flags.Changed(flag) || !a.tty {
		return value, nil
	}
	v, err := a.p.Confirm(title, true)
	return v, cancelled(err)
}

// cancelled maps a question ended by a signal (Ctrl-C, SIGTERM, SIGHUP) or
// by the end of the input to init's cancellation: nothing is written.
func cancelled(err error) error {
	if errors.Is(err, ask.ErrCancelled) {
		return &exitError{code: exitCancelled, err: errors.New("init cancelled: nothing was written")}
	}
	return err
}

// onlyWithCustom refuses a custom backlog manager's command flag given
// with another backlog manager.
func onlyWithCustom(flags interface{ Changed(string) bool }) error {
	for _, f := range []string{"list-command", "view-command", "close-command"} {
		if flags.Changed(f) {
			return &exitError{code: exitUsage, err: fmt.Errorf("--%s goes with --issue-tracker %s", f, templates.Custom)}
		}
	}
	return nil
}

// askCommands asks for a custom backlog manager's commands; viewing and
// closing an issue need the <ID> placeholder.
func askCommands(q *initAsker, f *initFlags) (templates.Commands, error) {
	var c templates.Commands
	var err error
	if c.List, err = q.input("list-command", "Command that prints the open issues", f.list, "", templates.CheckCommand); err != nil {
		return c, err
	}
	if c.View, err = q.input("view-command", "Command that shows one issue (<ID> where its id goes)", f.view, "", templates.CheckIDCommand); err != nil {
		return c, err
	}
	c.Close, err = q.input("close-command", "Command that closes one issue (<ID> where its id goes)", f.close, "", templates.CheckIDCommand)
	return c, err
}

func plainOptions(names []string) []ask.Option {
	var opts []ask.Option
	for _, n := range names {
		opts = append(opts, ask.Option{Label: n, Value: n})
	}
	return opts
}

func agentOptions() []ask.Option {
	var opts []ask.Option
	for _, a := range templates.Agents {
		opts = append(opts, ask.Option{Label: fmt.Sprintf("%s (%s)", a.Name, a.Source()), Value: a.Name})
	}
	return opts
}

func backlogOptions() []ask.Option {
	var opts []ask.Option
	for _, b := range templates.BacklogManagers {
		opts = append(opts, ask.Option{Label: b.Name + ": " + b.Description, Value: b.Name})
	}
	return opts
}

func templateOptions() []ask.Option {
	var opts []ask.Option
	for _, t := range templates.Templates {
		opts = append(opts, ask.Option{Label: t.Name + ": " + t.Description, Value: t.Name})
	}
	return opts
}

// agentCredentials asks the agent's plugin what credentials a block with
// this model needs (its description's RequiredEnv); the plugin also checks
// the model.
func agentCredentials(ctx context.Context, g *globals, dir, agent, model string) ([][]string, error) {
	host := g.newHost(dir)
	defer host.Close()
	prov, comp, err := host.Agent(ctx, agent)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agent, err)
	}
	schema, err := prov.ConfigSchema(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent %s (%s): config schema: %w", agent, comp.Source, err)
	}
	attrs := map[string]cty.Value{}
	for _, a := range schema.Attributes {
		v := cty.NullVal(a.Type)
		if a.Default != cty.NilVal {
			v = a.Default
		}
		if a.Name == "model" {
			v = cty.StringVal(model)
		}
		attrs[a.Name] = v
	}
	cfg := sdk.Config{Value: cty.ObjectVal(attrs)}
	ds, err := prov.Configure(ctx, cfg)
	if err == nil && ds.HasErrors() {
		var msgs []string
		for _, d := range ds {
			msgs = append(msgs, d.Summary+": "+d.Detail)
		}
		err = errors.New(strings.Join(msgs, "; "))
	}
	if err != nil {
		return nil, fmt.Errorf("agent %s with model %q: %w", agent, model, err)
	}
	desc, err := prov.Describe(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("agent %s (%s): describe: %w", agent, comp.Source, err)
	}
	return desc.RequiredEnv, nil
}

// writeConfigDir writes files into dir (created if missing), refusing when
// one exists, even one created since init started; on failure it removes
// what it wrote.
func writeConfigDir(dir string, files []templates.File) error {
	_, err := os.Lstat(dir)
	created := errors.Is(err, os.ErrNotExist)
	var written []string
	undo := func() {
		for _, p := range written {
			os.Remove(p)
		}
		if created {
			os.RemoveAll(dir)
		}
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		err := os.MkdirAll(filepath.Dir(p), 0o755)
		var file *os.File
		if err == nil {
			file, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
		if errors.Is(err, os.ErrExist) {
			undo()
			return refuseExisting(p)
		}
		if err == nil {
			written = append(written, p)
			_, err = file.Write(f.Content)
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			undo()
			return fmt.Errorf("write %s: %w (nothing was kept)", p, err)
		}
	}
	return nil
}

// createLabel creates the GitHub label with the host's gh; a failure is a
// warning with the command to run, since init's files are written.
func createLabel(ctx context.Context, root string, out io.Writer) {
	argv := []string{"gh", "label", "create", templates.Label, "--force",
		"--description", "Issues for sanddune to work on", "--color", "F9A825"}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = root
	if b, err := c.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "Warning: could not create the GitHub label %q (%v: %s); create it with: %s\n",
			templates.Label, err, strings.TrimSpace(string(b)), strings.Join(quoteArgs(argv), " "))
		return
	}
	fmt.Fprintf(out, "Created the GitHub label %q.\n", templates.Label)
}

func quoteArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, " \"'") {
			a = fmt.Sprintf("%q", a)
		}
		out[i] = a
	}
	return out
}

// buildInitImage builds the image through the sandbox plugin's own
// build-image command, with its progress.
func buildInitImage(ctx context.Context, g *globals, root string, o templates.Options) error {
	host := g.newHost(root)
	defer host.Close()
	retry := fmt.Sprintf("sanddune %s build-image --image-name %s", o.Sandbox, o.ImageName)
	cp, err := commandProvider(ctx, host, o.Sandbox)
	if err == nil {
		err = runPluginCommand(ctx, cp, o.Sandbox, "build-image", []string{"--image-name", o.ImageName})
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.code == exitCancelled {
			return err
		}
		msg := err.Error()
		if msg == "" {
			msg = "the build failed"
		}
		return &exitError{code: exitFailure, err: fmt.Errorf("%s; %s/ is written: build the image with `%s`", msg, configDirName, retry)}
	}
	return nil
}

func nextSteps(out io.Writer, o templates.Options, built bool) {
	fmt.Fprintln(out, "\nNext steps:")
	n := 0
	step := func(format string, args ...any) {
		n++
		fmt.Fprintf(out, "  %d. "+format+"\n", append([]any{n}, args...)...)
	}
	step("cp %s/.env.example %s/.env, and fill in the keys it lists", configDirName, configDirName)
	if !built {
		step("sanddune %s build-image --image-name %s", o.Sandbox, o.ImageName)
	}
	step("sanddune validate")
	step("sanddune run")
}
