// Command fakebacklog fakes the CLIs that sanddune init's templates run, for
// tests: nothing reaches the network. Its behaviour follows the name it is
// called by:
//
//   - gh: `issue list [--state S] [--label L] [--limit N] --json f,...`,
//     `issue view N [--comments]`, `issue close N [--comment C]`,
//     `label create NAME [...]`, on the GitHub issues in $FAKE_BACKLOG_DB;
//   - bd: `ready --json`, `show ID`, `close ID [--reason R]`, on the same file;
//   - claude: a scripted Claude Code CLI in print mode: it runs the shell
//     script $FAKE_AGENT_SCRIPT with the prompt on stdin and prints the
//     script's output as stream-json text (session capture off).
//
// The database is a JSON object: {"issues": [{"number", "title", "body",
// "state", "labels"}], "labels": [names]}.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

type issue struct {
	Number int      `json:"number"`
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	State  string   `json:"state"`
	Labels []string `json:"labels"`
}

type db struct {
	Issues []issue  `json:"issues"`
	Labels []string `json:"labels"`
}

func main() {
	var err error
	switch name := filepath.Base(os.Args[0]); name {
	case "gh":
		err = gh(os.Args[1:])
	case "bd":
		err = bd(os.Args[1:])
	case "claude":
		err = claude()
	default:
		err = fmt.Errorf("fakebacklog called as %q", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, filepath.Base(os.Args[0])+":", err)
		os.Exit(1)
	}
}

func load() (*db, error) {
	b, err := os.ReadFile(os.Getenv("FAKE_BACKLOG_DB"))
	if err != nil {
		return nil, err
	}
	var d db
	return &d, json.Unmarshal(b, &d)
}

func (d *db) save() error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(os.Getenv("FAKE_BACKLOG_DB"), b, 0o666)
}

func (d *db) find(id string) (*issue, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "#"))
	for i := range d.Issues {
		if err == nil && d.Issues[i].Number == n {
			return &d.Issues[i], nil
		}
	}
	return nil, fmt.Errorf("no issue %q", id)
}

// parse parses args with flags that take values, returning the positionals.
func parse(args []string, fs *flag.FlagSet) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) > 0 {
			pos, args = append(pos, args[0]), args[1:]
		}
	}
	return pos, nil
}

func gh(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: gh issue|label ...")
	}
	d, err := load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("gh", flag.ContinueOnError)
	state := fs.String("state", "open", "")
	label := fs.String("label", "", "")
	limit := fs.Int("limit", 30, "")
	fields := fs.String("json", "", "")
	fs.Bool("comments", false, "")
	fs.String("comment", "", "")
	fs.String("description", "", "")
	fs.String("color", "", "")
	fs.Bool("force", false, "")
	pos, err := parse(args[2:], fs)
	if err != nil {
		return err
	}
	switch args[0] + " " + args[1] {
	case "issue list":
		out := []map[string]any{}
		for _, is := range d.Issues {
			if (*state != "all" && is.State != *state) || (*label != "" && !slices.Contains(is.Labels, *label)) || len(out) == *limit {
				continue
			}
			all := map[string]any{"number": is.Number, "title": is.Title, "body": is.Body, "state": is.State}
			m := map[string]any{}
			for _, f := range strings.Split(*fields, ",") {
				m[f] = all[f]
			}
			out = append(out, m)
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	case "issue view":
		is, err := d.find(first(pos))
		if err != nil {
			return err
		}
		fmt.Printf("title:\t%s\nstate:\t%s\nnumber:\t%d\n--\n%s\n", is.Title, strings.ToUpper(is.State), is.Number, is.Body)
		return nil
	case "issue close":
		is, err := d.find(first(pos))
		if err != nil {
			return err
		}
		is.State = "closed"
		return d.save()
	case "label create":
		if !slices.Contains(d.Labels, first(pos)) {
			d.Labels = append(d.Labels, first(pos))
		}
		return d.save()
	}
	return fmt.Errorf("unknown command gh %s %s", args[0], args[1])
}

func bd(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: bd ready|show|close")
	}
	d, err := load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("bd", flag.ContinueOnError)
	fs.Bool("json", false, "")
	fs.String("reason", "", "")
	pos, err := parse(args[1:], fs)
	if err != nil {
		return err
	}
	switch args[0] {
	case "ready":
		out := []map[string]any{}
		for _, is := range d.Issues {
			if is.State == "open" {
				out = append(out, map[string]any{"id": "bd-" + strconv.Itoa(is.Number), "title": is.Title, "description": is.Body, "status": "open"})
			}
		}
		return json.NewEncoder(os.Stdout).Encode(out)
	case "show", "close":
		is, err := d.find(strings.TrimPrefix(first(pos), "bd-"))
		if err != nil {
			return err
		}
		if args[0] == "show" {
			fmt.Printf("bd-%d: %s\n\n%s\n", is.Number, is.Title, is.Body)
			return nil
		}
		is.State = "closed"
		return d.save()
	}
	return fmt.Errorf("unknown command bd %s", args[0])
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// claude runs the scripted agent and prints its output as a Claude Code
// stream: init, the text, and the result.
func claude() error {
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	cmd := exec.Command("sh", "-c", os.Getenv("FAKE_AGENT_SCRIPT"))
	cmd.Stdin = bytes.NewReader(prompt)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	runErr := cmd.Run()
	text := out.String()
	const session = "0f7c1d9a-5e2b-4c1e-9d3a-6b8e2f4a1c70"
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(map[string]any{"type": "system", "subtype": "init", "session_id": session})
	enc.Encode(map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}}})
	res := map[string]any{"type": "result", "subtype": "success", "is_error": runErr != nil, "result": text, "session_id": session}
	if runErr != nil {
		res["subtype"] = "error_during_execution"
	}
	enc.Encode(res)
	if runErr != nil {
		os.Exit(1)
	}
	return nil
}
