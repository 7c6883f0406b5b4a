// Package output extracts a run's structured output: the payload of the
// last <tag>…</tag> in the agent's final text (its result text, else its
// text blocks; never tool output), as a trimmed string or as JSON
// validated against a JSON Schema.
//
// A JSON payload is decoded with numbers as json.Number, so a value is one
// of nil, bool, json.Number, string, []any and map[string]any; Cty gives
// it to HCL.
package output

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/missingstudio/sanddune/core/internal/jsonschema"
)

// Type is how the payload is read.
type Type string

// The payload types.
const (
	String Type = "string" // the tag's content, trimmed
	JSON   Type = "json"   // a JSON value, validated against Spec.Schema when set
)

// Spec asks a run for structured output.
type Spec struct {
	// Tag names the XML-style tag around the payload: "plan" for
	// <plan>…</plan>.
	Tag string
	// Type is String or JSON; empty means JSON when Schema is set.
	Type Type
	// Schema is a JSON Schema document (JSON text) a JSON payload must
	// match; empty accepts any JSON value. It may not $ref other files;
	// docs/configuration.md lists the keywords it may use.
	Schema string

	compiled *jsonschema.Schema
}

var tagRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// Problem is what Compile found wrong, with the attribute it concerns.
type Problem struct {
	Attribute string // "tag", "type" or "schema"
	Err       error
}

func (p *Problem) Error() string { return p.Attribute + ": " + p.Err.Error() }
func (p *Problem) Unwrap() error { return p.Err }

// Compile checks the spec and compiles its schema; a failure is a
// *Problem. Extract needs a compiled spec.
func (s *Spec) Compile() error {
	if !tagRE.MatchString(s.Tag) {
		return &Problem{"tag", fmt.Errorf("%q is not a tag name: use letters, digits, '_', '-' and '.', starting with a letter or '_'", s.Tag)}
	}
	switch {
	case s.Type == "" && s.Schema == "":
		return &Problem{"type", errors.New(`set schema = file("<name>.schema.json") for JSON output, or type = "string"`)}
	case s.Type == "":
		s.Type = JSON
	case s.Type != String && s.Type != JSON:
		return &Problem{"type", fmt.Errorf(`%q is not an output type: use "json" or "string"`, s.Type)}
	case s.Type == String && s.Schema != "":
		return &Problem{"schema", errors.New(`a schema applies to JSON output: drop type = "string", or the schema`)}
	}
	if s.Schema == "" {
		return nil
	}
	doc, err := jsonschema.Decode(s.Schema)
	if err != nil {
		return &Problem{"schema", fmt.Errorf("the schema is not JSON: %w", err)}
	}
	if s.compiled, err = jsonschema.Compile(doc); err != nil {
		return &Problem{"schema", fmt.Errorf("invalid JSON Schema: %w", err)}
	}
	return nil
}

// OpenTag is the tag's opening literal, e.g. "<plan>": the prompt must
// contain it.
func (s *Spec) OpenTag() string { return "<" + s.Tag + ">" }

// Error is structured output that could not be extracted: no tag, not
// JSON, or not matching the schema.
type Error struct {
	Tag string
	// Raw is the last <tag>…</tag> content, as the agent wrote it ("" when
	// there was none).
	Raw   string
	Cause Cause
}

// Cause says why: the JSON Pointer of the offending value in the payload
// ("" for the payload itself) and what is wrong there.
type Cause struct {
	InstancePath string `json:"instance_path"`
	Message      string `json:"message"`
}

func (e *Error) Error() string {
	if e.Cause.InstancePath == "" {
		return fmt.Sprintf("<%s> output: %s", e.Tag, e.Cause.Message)
	}
	return fmt.Sprintf("<%s> output at %s: %s", e.Tag, e.Cause.InstancePath, e.Cause.Message)
}

// Extract reads the payload of the last <tag>…</tag> in text: a string
// for String, a decoded and validated JSON value for JSON. A failure is an
// *Error.
func (s *Spec) Extract(text string) (any, error) {
	raw, ok := lastMatch(text, s.Tag)
	if !ok {
		return nil, &Error{Tag: s.Tag, Cause: Cause{Message: fmt.Sprintf("no %s…</%s> in the agent's final text", s.OpenTag(), s.Tag)}}
	}
	if s.Type == String {
		return strings.TrimSpace(raw), nil
	}
	fail := func(path, format string, args ...any) (any, error) {
		return nil, &Error{Tag: s.Tag, Raw: raw, Cause: Cause{InstancePath: path, Message: fmt.Sprintf(format, args...)}}
	}
	v, err := jsonschema.Decode(raw)
	if err != nil {
		return fail("", "not JSON: %v", err)
	}
	if s.compiled == nil {
		return v, nil
	}
	if e := s.compiled.Validate(v); e != nil {
		return fail(e.InstancePath, "%s", e.Message)
	}
	return v, nil
}

// lastMatch is the content of the last <tag>…</tag> in text: the last
// closing tag, and the opening tag nearest before it.
func lastMatch(text, tag string) (string, bool) {
	open, closing := "<"+tag+">", "</"+tag+">"
	end := strings.LastIndex(text, closing)
	if end < 0 {
		return "", false
	}
	start := strings.LastIndex(text[:end], open)
	if start < 0 {
		return "", false
	}
	return text[start+len(open) : end], true
}

// Cty converts an extracted value (a string, or a JSON value as Extract
// decodes it) to a cty value: objects become objects, arrays tuples, nil
// a null.
func Cty(v any) (cty.Value, error) {
	if v == nil {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	if s, ok := v.(string); ok {
		return cty.StringVal(s), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return cty.NilVal, err
	}
	t, err := ctyjson.ImpliedType(b)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(b, t)
}
