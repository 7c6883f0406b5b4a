// Package redact hides secret values in what sanddune writes: run logs,
// --json output, --events and error messages. A Redactor replaces every
// occurrence of a secret value with "[redacted KEY]", naming the key the
// value came from and never the value.
package redact

import (
	"sort"
	"strings"
)

// MinLen is the shortest value redacted: shorter values ("1", "dev") are
// no credential, and replacing them everywhere would garble the output.
const MinLen = 6

// Redactor replaces secret values. The zero value and nil redact nothing.
type Redactor struct {
	r *strings.Replacer
}

// New returns a Redactor for the values of secrets (key → value). Values
// shorter than MinLen are left alone; a value that two keys share is
// named after the first key in sorted order.
func New(secrets map[string]string) *Redactor {
	keys := make([]string, 0, len(secrets))
	for k, v := range secrets {
		if len(v) >= MinLen {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	// Longest values first: a secret holding another is replaced whole.
	sort.Slice(keys, func(i, j int) bool {
		a, b := secrets[keys[i]], secrets[keys[j]]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return keys[i] < keys[j]
	})
	seen := map[string]bool{}
	var pairs []string
	for _, k := range keys {
		if v := secrets[k]; !seen[v] {
			seen[v] = true
			pairs = append(pairs, v, "[redacted "+k+"]")
		}
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String returns s with every secret value replaced.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Error returns err with its message redacted; errors.Is and errors.As
// still see err.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil || r.r == nil {
		return err
	}
	msg := err.Error()
	if red := r.r.Replace(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
