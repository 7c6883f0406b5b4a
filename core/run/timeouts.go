package run

import (
	"encoding/json"
	"time"
)

// The defaults of a run that sets none.
const (
	DefaultMaxIterations     = 1
	DefaultCompletionSignal  = "<promise>COMPLETE</promise>"
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultCompletionTimeout = 60 * time.Second
)

// MaxAgentLine caps one agent output line handed to the agent's parser;
// the rest of a longer line is dropped, with a warning.
const MaxAgentLine = 16 << 20

// Timeouts bound the lifecycle steps of a run; zero values take the
// defaults (DefaultTimeouts).
type Timeouts struct {
	// Worktree: preparing the branch and the worktree.
	Worktree time.Duration
	// CreateSandbox: the sandbox provider's Create.
	CreateSandbox time.Duration
	// Hooks: each hook without a timeout of its own.
	Hooks time.Duration
	// SyncIn and SyncOut: the git bundles into and out of an isolated
	// sandbox.
	SyncIn  time.Duration
	SyncOut time.Duration
	// Merge: merge-to-head's merge into the target branch.
	Merge time.Duration
	// Copy: copy_to_worktree's copy (into the worktree or the sandbox).
	Copy time.Duration
}

// TimeoutStep is one of Timeouts: the name of its attribute in a
// timeouts block and the duration.
type TimeoutStep struct {
	Name     string
	Duration *time.Duration
}

// Steps lists t's timeouts, in the order of its fields.
func (t *Timeouts) Steps() []TimeoutStep {
	return []TimeoutStep{{"worktree", &t.Worktree}, {"create_sandbox", &t.CreateSandbox}, {"hooks", &t.Hooks},
		{"sync_in", &t.SyncIn}, {"sync_out", &t.SyncOut}, {"merge", &t.Merge}, {"copy", &t.Copy}}
}

// MarshalJSON writes each timeout as a duration string ("5m0s").
func (t Timeouts) MarshalJSON() ([]byte, error) {
	m := map[string]string{}
	for _, st := range t.Steps() {
		m[st.Name] = st.Duration.String()
	}
	return json.Marshal(m)
}

// DefaultTimeouts are the lifecycle timeouts of a run that sets none.
var DefaultTimeouts = Timeouts{
	Worktree: 2 * time.Minute, CreateSandbox: 5 * time.Minute,
	Hooks: 60 * time.Second, SyncIn: 5 * time.Minute, SyncOut: 5 * time.Minute, Merge: 2 * time.Minute,
	Copy: 10 * time.Minute,
}

// WithDefaults returns t with its zero values set to the defaults.
func (t Timeouts) WithDefaults() Timeouts {
	d := DefaultTimeouts
	defaults := d.Steps()
	for i, st := range t.Steps() {
		if *st.Duration == 0 {
			*st.Duration = *defaults[i].Duration
		}
	}
	return t
}
