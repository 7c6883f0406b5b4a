package templates

import (
	"regexp"
	"strings"
	"testing"
)

// initKeys are the keys Render replaces; prompts keep every other {{KEY}}
// for their arguments at run time.
var initKeys = regexp.MustCompile(`\{\{(AGENT|MODEL|SANDBOX|IMAGE_NAME|AGENT_INSTALL|BACKLOG_MANAGER_TOOLS|LIST_TASKS_COMMAND|VIEW_TASK_COMMAND|VIEW_ISSUE_COMMAND|CLOSE_TASK_COMMAND|LABEL_FILTER)\}\}`)

func TestRenderFillsEveryInitKey(t *testing.T) {
	for _, tmpl := range TemplateNames() {
		for _, bm := range BacklogManagers {
			for _, label := range []bool{false, true} {
				files, err := Render(Options{Template: tmpl, Agent: "pi", Model: "m", Sandbox: "docker", ImageName: "img:x",
					BacklogManager: bm.Name, Label: label, Credentials: [][]string{{"A_KEY", "B_KEY"}},
					Commands: Commands{List: "t ls", View: "t show <ID>", Close: "t close <ID>"}})
				if err != nil {
					t.Fatal(err)
				}
				var hcl, prompts string
				for _, f := range files {
					if k := initKeys.FindString(string(f.Content)); k != "" {
						t.Errorf("%s/%s: %s left in %s", tmpl, bm.Name, k, f.Path)
					}
					switch {
					case f.Path == "sanddune.hcl":
						hcl = string(f.Content)
					case strings.HasSuffix(f.Path, ".md"):
						prompts += string(f.Content)
					}
				}
				if !strings.Contains(hcl, `agent "pi" "default"`) || !strings.Contains(hcl, `image = "img:x"`) {
					t.Errorf("%s: sanddune.hcl:\n%s", tmpl, hcl)
				}
				list := strings.ReplaceAll(bm.List, "{{LABEL_FILTER}}", map[bool]string{true: " --label sanddune"}[label])
				if bm.Name == Custom {
					list = "t ls"
				}
				if tmpl != "blank" && !strings.Contains(prompts, "!`"+list+"`") {
					t.Errorf("%s/%s: the prompts do not list the issues:\n%s", tmpl, bm.Name, prompts)
				}
			}
		}
	}
}

func TestRenderRefusesUnknownChoicesListingTheKnownOnes(t *testing.T) {
	ok := Options{Template: "blank", Agent: "claude", Sandbox: "docker", BacklogManager: "beads"}
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Template = "x" }, `unknown template "x"; available: blank, simple-loop`},
		{func(o *Options) { o.Agent = "x" }, `unknown agent "x"; available: claude, codex, gemini, opencode, pi`},
		{func(o *Options) { o.Sandbox = "x" }, `unknown sandbox "x"; available: docker, podman`},
		{func(o *Options) { o.BacklogManager = "x" }, `unknown backlog manager "x"; available: github-issues, beads, custom`},
	} {
		o := ok
		c.edit(&o)
		if _, err := Render(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Render(%+v) = %v, want %q", o, err, c.want)
		}
	}
}

func TestEnvExampleListsEveryCredentialGroup(t *testing.T) {
	got := envExample("claude", [][]string{{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}, {"OTHER"}}, BacklogManagers[0])
	for _, want := range []string{"\nANTHROPIC_API_KEY=\n# CLAUDE_CODE_OAUTH_TOKEN=\n", "\nOTHER=\n", "\nGH_TOKEN=\n"} {
		if !strings.Contains(got, want) {
			t.Errorf(".env.example lacks %q:\n%s", want, got)
		}
	}
}
