package templates

import (
	"regexp"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/plugins/claude"
	"github.com/missingstudio/sanddune/plugins/codex"
	"github.com/missingstudio/sanddune/plugins/copilot"
	"github.com/missingstudio/sanddune/plugins/gemini"
	"github.com/missingstudio/sanddune/plugins/pi"
)

// initKeys are the keys Render replaces; prompts keep every other {{KEY}}
// for their arguments at run time.
var initKeys = regexp.MustCompile(`\{\{(AGENT|MODEL|SANDBOX|IMAGE_NAME|AGENT_INSTALL|AGENT_DIRS|BACKLOG_MANAGER_TOOLS|LIST_TASKS_COMMAND|VIEW_TASK_COMMAND|VIEW_ISSUE_COMMAND|CLOSE_TASK_COMMAND|LABEL_FILTER)\}\}`)

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

// TestAgentDirHoldsItsSessions: each agent's Dir is the directory its
// plugin's session pattern puts the sessions' directory in (which a run
// mounts from the host), so an image made from the template has every
// directory a run needs in the home, owned by the agent user, and runs
// need not prepare it; the Dockerfile makes it as that user.
func TestAgentDirHoldsItsSessions(t *testing.T) {
	patterns := map[string]string{"claude": claude.SessionPattern, "codex": codex.SessionPattern,
		"gemini": gemini.SessionPattern, "pi": pi.SessionPattern, "copilot": copilot.SessionPattern}
	for _, a := range Agents {
		want := ""
		if p, ok := patterns[a.Name]; ok {
			elems := strings.Split(strings.TrimPrefix(p, "{home}/"), "/")
			var static []string
			for _, e := range elems[:len(elems)-1] {
				if strings.ContainsAny(e, "{*") {
					break
				}
				static = append(static, e)
			}
			want = strings.Join(static[:len(static)-1], "/")
		}
		if a.Dir != want {
			t.Errorf("%s: Dir %q, want %q (the parent of its sessions' directory)", a.Name, a.Dir, want)
		}
		files, err := Render(Options{Template: "blank", Agent: a.Name, Sandbox: "docker", BacklogManager: "beads"})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if f.Path != "Dockerfile" {
				continue
			}
			df := string(f.Content)
			made := strings.Contains(df, "RUN mkdir -p /home/agent/"+want+"\n")
			if user := strings.Index(df, "USER ${AGENT_UID}"); want != "" && (!made || strings.Index(df, "mkdir -p /home/agent/") < user) {
				t.Errorf("%s: the Dockerfile does not make /home/agent/%s as the agent user:\n%s", a.Name, want, df)
			}
			if want == "" && strings.Contains(df, "mkdir -p /home/agent") {
				t.Errorf("%s: the Dockerfile makes a directory the agent has no use for:\n%s", a.Name, df)
			}
		}
	}
}
