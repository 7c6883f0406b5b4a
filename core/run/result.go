// Package run holds the types a run is described and reported with: one
// description of a run (Options: core.RunOptions, and what a run block is
// read into) with its timeouts, hooks and defaults, its result and
// outcome, and its errors. Package core's API and its internal engine
// share them.
package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Result is what a run produced. Its JSON form is one entry of the
// `sanddune run --json` document; absent values are null.
type Result struct {
	Name string
	// Branch is where the commits are: the host branch (head,
	// merge-to-head) or the named branch (branch). On a failed
	// merge-to-head run it is the kept temporary branch (the host branch
	// when there was nothing to keep).
	Branch  string
	Commits []worktree.Commit
	// CompletionSignal is the signal that ended the loop, "" when none did.
	CompletionSignal string
	Iterations       []Iteration
	// Stdout is the agent's output (its result text, else its text), the
	// last MaxStdoutBytes of it.
	Stdout string
	// Output is the structured output, when the run asks for one: a string
	// (type "string"), or a JSON value (nil, bool, json.Number, string,
	// []any, map[string]any) that matched the schema. output.Cty converts
	// it for HCL.
	Output any
	// LogFile is the run's log (file mode only).
	LogFile string
	// PreservedWorktreePath is a worktree kept because it had uncommitted
	// changes.
	PreservedWorktreePath string
	// PatchPath is uncommitted work saved from an isolated sandbox.
	PatchPath string
	// Elapsed is the run's wall time.
	Elapsed time.Duration
	// EgressDenied counts the connections and name lookups the sandbox's
	// egress policy refused; EgressRefused says which, most refused first
	// (the first refusal of each target is a warning in the log).
	EgressDenied  int
	EgressRefused []EgressCount
	// Steps are a session's steps, in order, as far as it got; nil for a
	// run.
	Steps []Outcome
	// Budgets are the token budgets the run spent, as they stood when it
	// ended: its own and its pipeline's.
	Budgets []BudgetUsage
}

// ResumeOptions say which agent session a run continues: ResumeSession
// resumes it, ForkSession forks it instead.
type ResumeOptions struct {
	ResumeSession string
	ForkSession   bool
}

// Resume says how a later run continues this one's agent session (its
// last iteration's), forking it when fork is set; zero when the agent
// reported none. In the same sandbox (core.Sandbox.Run) the session is
// there already; elsewhere it needs to have been captured to the host.
func (r *Result) Resume(fork bool) ResumeOptions {
	for i := len(r.Iterations) - 1; i >= 0; i-- {
		if id := r.Iterations[i].SessionID; id != "" {
			return ResumeOptions{ResumeSession: id, ForkSession: fork}
		}
	}
	return ResumeOptions{}
}

// Outcome is how one run, session or step went: its result (also of a
// failed one, once setup began) and its error, an *Error.
type Outcome struct {
	Name   string
	Result *Result
	Err    error
	// Skipped says why a run did not start: a run it depends on did not
	// succeed. Result and Err are nil then.
	Skipped string
}

// MaxStdoutBytes bounds Result.Stdout.
const MaxStdoutBytes = 64 << 10

// Iteration is one agent invocation.
type Iteration struct {
	SessionID string
	// SessionFilePath is the captured session file on the host.
	SessionFilePath string
	Usage           *sdk.Usage
}

// Usage sums the iterations' token usage; nil when none reported any.
func (r *Result) Usage() *sdk.Usage {
	var total *sdk.Usage
	for _, it := range r.Iterations {
		if it.Usage != nil {
			if total == nil {
				total = &sdk.Usage{}
			}
			*total = total.Add(*it.Usage)
		}
	}
	return total
}

// Tokens is every token of u: input, output, cache reads and cache
// writes; 0 for nil.
func Tokens(u *sdk.Usage) int64 {
	if u == nil {
		return 0
	}
	return u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON writes the documented shape: every key always present,
// null when there is no value.
func (r Result) MarshalJSON() ([]byte, error) {
	its := r.Iterations
	if its == nil {
		its = []Iteration{}
	}
	return marshal(struct {
		Name                  string        `json:"name"`
		Branch                *string       `json:"branch"`
		Commits               []commitJSON  `json:"commits"`
		CompletionSignal      *string       `json:"completion_signal"`
		Iterations            []Iteration   `json:"iterations"`
		Stdout                string        `json:"stdout"`
		Output                any           `json:"output"`
		LogFile               *string       `json:"log_file"`
		PreservedWorktreePath *string       `json:"preserved_worktree_path"`
		PatchPath             *string       `json:"patch_path"`
		EgressDenied          int           `json:"egress_denied"`
		EgressRefused         []EgressCount `json:"egress_refused"`
		Steps                 []Outcome     `json:"steps"`
		TokenBudgets          []BudgetUsage `json:"token_budgets"`
	}{r.Name, nullable(r.Branch), commitsJSON(r.Commits), nullable(r.CompletionSignal), its, r.Stdout, r.Output, nullable(r.LogFile),
		nullable(r.PreservedWorktreePath), nullable(r.PatchPath), r.EgressDenied, r.EgressRefused, r.Steps, r.Budgets})
}

// MarshalJSON writes the result's JSON (an empty result's when there is
// none) with "error": null on success, else an object (errorJSON), and
// "skipped": why the run did not start, null when it did.
func (o Outcome) MarshalJSON() ([]byte, error) {
	r := o.Result
	if r == nil {
		r = &Result{Name: o.Name}
	}
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	e, err := marshal(errorJSON(o.Err))
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"error":`...)
	b = append(b, e...)
	if s, err := marshal(nullable(o.Skipped)); err == nil {
		b = append(append(b, `,"skipped":`...), s...)
	}
	return append(b, '}'), nil
}

// Error kinds in --json.
const (
	KindFailed           = "failed"
	KindCancelled        = "cancelled"
	KindStructuredOutput = "structured_output"
	KindTokenBudget      = "token_budget"
)

// errorDoc is a failed run's "error" in --json: its kind, message, phase,
// plugin and next step, each key always there (null when empty); a
// structured-output failure adds its own keys.
type errorDoc struct {
	Kind    string  `json:"kind"`
	Message string  `json:"message"`
	Phase   *string `json:"phase"`
	Plugin  *string `json:"plugin"`
	Hint    *string `json:"hint"`
	*outputErrorDoc
}

type outputErrorDoc struct {
	Tag                   string       `json:"tag"`
	Raw                   *string      `json:"raw"`
	Cause                 output.Cause `json:"cause"`
	SessionID             *string      `json:"session_id"`
	SessionFile           *string      `json:"session_file"`
	Branch                *string      `json:"branch"`
	Commits               []commitJSON `json:"commits"`
	PreservedWorktreePath *string      `json:"preserved_worktree_path"`
}

type commitJSON struct {
	SHA string `json:"sha"`
}

func commitsJSON(cs []worktree.Commit) []commitJSON {
	out := make([]commitJSON, len(cs))
	for i, c := range cs {
		out[i] = commitJSON{c.SHA}
	}
	return out
}

// errorJSON is err's "error" object, nil for no error.
func errorJSON(err error) *errorDoc {
	if err == nil {
		return nil
	}
	d := &errorDoc{Kind: KindFailed, Message: err.Error()}
	var re *Error
	if errors.As(err, &re) {
		d.Phase, d.Plugin, d.Hint = nullable(string(re.Phase)), nullable(re.Plugin), nullable(re.Hint)
		if re.Cancelled {
			d.Kind = KindCancelled
		}
		if errors.As(err, new(*BudgetError)) {
			d.Kind = KindTokenBudget
		}
	}
	var oe *OutputError
	if errors.As(err, &oe) {
		d.Kind = KindStructuredOutput
		d.outputErrorDoc = &outputErrorDoc{Tag: oe.Tag, Raw: nullable(oe.Raw), Cause: oe.Cause,
			SessionID: nullable(oe.SessionID), SessionFile: nullable(oe.SessionFile), Branch: nullable(oe.Branch),
			Commits: commitsJSON(oe.Commits), PreservedWorktreePath: nullable(oe.PreservedWorktree)}
	}
	return d
}

// MarshalJSON writes the documented shape, null for absent values.
func (it Iteration) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		SessionID       *string    `json:"session_id"`
		SessionFilePath *string    `json:"session_file_path"`
		Usage           *sdk.Usage `json:"usage"`
	}{nullable(it.SessionID), nullable(it.SessionFilePath), it.Usage})
}

// marshal is json.Marshal without HTML escaping: signals like
// <promise>COMPLETE</promise> stay readable (an encoder that wants
// escaping re-escapes a Marshaler's output).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// EgressCount is how often the egress policy refused one target:
// "host:port", "host (dns)" for a name lookup, "host:port/udp".
type EgressCount struct {
	Target string `json:"target"`
	Count  int    `json:"count"`
}

// AddEgressCounts adds counts per target to r.EgressRefused (and their sum
// to r.EgressDenied), keeping it most refused first.
func (r *Result) AddEgressCounts(counts map[string]int) {
	for t, n := range counts {
		r.EgressDenied += n
		i := slices.IndexFunc(r.EgressRefused, func(c EgressCount) bool { return c.Target == t })
		if i < 0 {
			r.EgressRefused = append(r.EgressRefused, EgressCount{Target: t})
			i = len(r.EgressRefused) - 1
		}
		r.EgressRefused[i].Count += n
	}
	slices.SortFunc(r.EgressRefused, func(a, b EgressCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Target, b.Target)
	})
}

// EgressNote is "3 egress attempt(s) refused: a:443 ×2, b (dns)", ""
// when none was.
func (r *Result) EgressNote() string {
	if r.EgressDenied == 0 {
		return ""
	}
	return fmt.Sprintf("%d egress attempt(s) refused: %s", r.EgressDenied, r.EgressTargets())
}

// EgressTargets lists the five most refused targets: "a:443 ×2, b (dns)".
func (r *Result) EgressTargets() string {
	var ts []string
	for i, c := range r.EgressRefused {
		if i == 5 {
			ts = append(ts, fmt.Sprintf("and %d more", len(r.EgressRefused)-i))
			break
		}
		t := c.Target
		if c.Count > 1 {
			t += fmt.Sprintf(" ×%d", c.Count)
		}
		ts = append(ts, t)
	}
	return strings.Join(ts, ", ")
}
