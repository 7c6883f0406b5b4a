// Package jsonschema validates JSON values against a JSON Schema: the
// validation keywords of drafts 4 to 2020-12, with $ref only inside the
// document (ADR 0028). Compile rejects what it does not support instead of
// ignoring it; format is asserted only under a draft 4–7 $schema (the
// common formats), content* and the other annotations never.
//
// Values are what Decode returns: nil, bool, json.Number, string, []any and
// map[string]any. Numbers are compared exactly (math/big).
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Decode reads one JSON value, numbers as json.Number.
func Decode(text string) (any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// Schema is a compiled schema.
type Schema struct {
	never bool // the schema false

	ref   *Schema
	types []string
	enum  []any
	cnst  *any

	multipleOf, minimum, maximum, exclusiveMin, exclusiveMax *big.Rat

	// The counts are -1 when unset.
	minLength, maxLength int
	pattern              *regexp.Regexp
	format               string
	formatOK             func(string) bool // nil: not asserted

	prefixItems                  []*Schema
	items, contains              *Schema
	minItems, maxItems           int
	minContains, maxContains     int
	uniqueItems                  bool
	properties                   map[string]*Schema
	patternProperties            []patternSchema
	additionalProperties         *Schema
	propertyNames                *Schema
	required                     []string
	minProperties, maxProperties int
	dependentRequired            map[string][]string
	dependentSchemas             map[string]*Schema

	allOf, anyOf, oneOf  []*Schema
	not, cond, then, els *Schema
}

type patternSchema struct {
	re *regexp.Regexp
	s  *Schema
}

// unsupported are keywords Compile refuses: they would change what
// validates, and this package does not implement them.
var unsupported = []string{"$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"}

// Compile compiles a decoded schema document. An error names the keyword's
// location in the document as a JSON Pointer.
func Compile(doc any) (*Schema, error) {
	c := &compiler{root: doc, byPtr: map[string]*Schema{}, draft7: draft4to7(doc)}
	return c.at("")
}

type compiler struct {
	root  any
	byPtr map[string]*Schema // compiled or being compiled, by JSON Pointer
	// draft7: $schema is draft 4, 6 or 7, where format is an assertion
	// and a $ref's sibling keywords are ignored.
	draft7 bool
}

// at compiles the subschema at a JSON Pointer of the document, once.
func (c *compiler) at(ptr string) (*Schema, error) {
	if s, ok := c.byPtr[ptr]; ok {
		return s, nil
	}
	v, err := lookup(c.root, ptr)
	if err != nil {
		return nil, err
	}
	s := &Schema{maxLength: -1, maxItems: -1, maxContains: -1, maxProperties: -1}
	c.byPtr[ptr] = s
	if err := c.fill(s, v, ptr); err != nil {
		return nil, err
	}
	return s, nil
}

// problem is a bad schema: where and what.
func problem(ptr, format string, args ...any) error {
	if ptr == "" {
		ptr = "the root"
	}
	return fmt.Errorf("at %s: %s", ptr, fmt.Sprintf(format, args...))
}

func (c *compiler) fill(s *Schema, v any, ptr string) error {
	switch v := v.(type) {
	case bool:
		s.never = !v
		return nil
	case map[string]any:
		return c.object(s, v, ptr)
	}
	return problem(ptr, "a schema is an object or a boolean, not %s", kind(v))
}

func (c *compiler) object(s *Schema, m map[string]any, ptr string) error {
	for _, k := range unsupported {
		if _, ok := m[k]; ok {
			return problem(ptr+"/"+escape(k), "%s is not supported", k)
		}
	}
	kw := func(k string) string { return ptr + "/" + escape(k) }
	if _, ok := m["$id"]; ok && ptr != "" {
		return problem(kw("$id"), "$id is supported only at the root (a $ref resolves against the whole document)")
	}
	sub := func(k string) (*Schema, error) {
		if _, ok := m[k]; !ok {
			return nil, nil
		}
		return c.at(kw(k))
	}
	var err error
	if r, ok := m["$ref"]; ok {
		ref, isStr := r.(string)
		if !isStr {
			return problem(kw("$ref"), "$ref is a string, not %s", kind(r))
		}
		target, perr := refPointer(ref)
		if perr != nil {
			return problem(kw("$ref"), "%v", perr)
		}
		if s.ref, err = c.at(target); err != nil {
			return err
		}
		if c.draft7 {
			return nil
		}
	}
	if t, ok := m["type"]; ok {
		if s.types, err = typeNames(t, kw("type")); err != nil {
			return err
		}
	}
	if e, ok := m["enum"]; ok {
		if s.enum, ok = e.([]any); !ok {
			return problem(kw("enum"), "enum is an array, not %s", kind(e))
		}
	}
	if cv, ok := m["const"]; ok {
		s.cnst = &cv
	}

	// Numbers.
	for _, n := range []struct {
		k   string
		dst **big.Rat
	}{{"multipleOf", &s.multipleOf}, {"minimum", &s.minimum}, {"maximum", &s.maximum}} {
		if *n.dst, err = number(m, n.k, kw(n.k)); err != nil {
			return err
		}
	}
	if s.multipleOf != nil && s.multipleOf.Sign() <= 0 {
		return problem(kw("multipleOf"), "multipleOf must be greater than 0")
	}
	for _, n := range []struct {
		k          string
		dst, bound **big.Rat
	}{{"exclusiveMinimum", &s.exclusiveMin, &s.minimum}, {"exclusiveMaximum", &s.exclusiveMax, &s.maximum}} {
		k, dst := n.k, n.dst
		switch x := m[k].(type) {
		case nil:
			if _, ok := m[k]; ok {
				return problem(kw(k), "%s is a number (or, in draft 4, a boolean), not null", k)
			}
		case bool: // draft 4: makes minimum or maximum exclusive
			if x {
				*dst, *n.bound = *n.bound, nil
			}
		default:
			if *dst, err = number(m, k, kw(k)); err != nil {
				return err
			}
		}
	}

	// Counts.
	for _, n := range []struct {
		k   string
		dst *int
	}{
		{"minLength", &s.minLength}, {"maxLength", &s.maxLength}, {"minItems", &s.minItems}, {"maxItems", &s.maxItems},
		{"minContains", &s.minContains}, {"maxContains", &s.maxContains}, {"minProperties", &s.minProperties}, {"maxProperties", &s.maxProperties},
	} {
		if *n.dst, err = count(m, n.k, kw(n.k)); err != nil {
			return err
		}
	}

	// Strings.
	if p, ok := m["pattern"]; ok {
		if s.pattern, err = pattern(p, kw("pattern")); err != nil {
			return err
		}
	}

	if f, ok := m["format"]; ok {
		if s.format, ok = f.(string); !ok {
			return problem(kw("format"), "format is a string, not %s", kind(f))
		}
		if c.draft7 {
			s.formatOK = formats[s.format]
		}
	}

	// Arrays: items as an array is draft 4 to 2019-09's prefixItems, and
	// additionalItems its items.
	if p, ok := m["prefixItems"]; ok {
		if s.prefixItems, err = c.list(p, kw("prefixItems")); err != nil {
			return err
		}
	}
	switch it := m["items"].(type) {
	case []any:
		if s.prefixItems, err = c.list(it, kw("items")); err != nil {
			return err
		}
		if s.items, err = sub("additionalItems"); err != nil {
			return err
		}
	default:
		if s.items, err = sub("items"); err != nil {
			return err
		}
	}
	if s.contains, err = sub("contains"); err != nil {
		return err
	}
	if u, ok := m["uniqueItems"]; ok {
		if s.uniqueItems, ok = u.(bool); !ok {
			return problem(kw("uniqueItems"), "uniqueItems is a boolean, not %s", kind(u))
		}
	}

	// Objects.
	if s.properties, err = c.schemaMap(m, "properties", kw("properties")); err != nil {
		return err
	}
	pp, err := c.schemaMap(m, "patternProperties", kw("patternProperties"))
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(pp)) {
		re, err := pattern(k, kw("patternProperties")+"/"+escape(k))
		if err != nil {
			return err
		}
		s.patternProperties = append(s.patternProperties, patternSchema{re, pp[k]})
	}
	if s.additionalProperties, err = sub("additionalProperties"); err != nil {
		return err
	}
	if s.propertyNames, err = sub("propertyNames"); err != nil {
		return err
	}
	if r, ok := m["required"]; ok {
		if s.required, err = strings_(r, kw("required")); err != nil {
			return err
		}
	}
	if s.dependentSchemas, err = c.schemaMap(m, "dependentSchemas", kw("dependentSchemas")); err != nil {
		return err
	}
	if err := c.dependencies(s, m, "dependentRequired", kw("dependentRequired"), false); err != nil {
		return err
	}
	if err := c.dependencies(s, m, "dependencies", kw("dependencies"), true); err != nil {
		return err
	}

	// Applicators.
	for _, n := range []struct {
		k   string
		dst *[]*Schema
	}{{"allOf", &s.allOf}, {"anyOf", &s.anyOf}, {"oneOf", &s.oneOf}} {
		if l, ok := m[n.k]; ok {
			if *n.dst, err = c.list(l, kw(n.k)); err != nil {
				return err
			}
			if len(*n.dst) == 0 {
				return problem(kw(n.k), "%s needs at least one schema", n.k)
			}
		}
	}
	for _, n := range []struct {
		k   string
		dst **Schema
	}{{"not", &s.not}, {"if", &s.cond}, {"then", &s.then}, {"else", &s.els}} {
		if *n.dst, err = sub(n.k); err != nil {
			return err
		}
	}
	// Subschemas only a $ref reaches are compiled then; compiling the
	// definitions now reports their problems even when nothing uses them.
	for _, k := range []string{"$defs", "definitions"} {
		if _, err := c.schemaMap(m, k, kw(k)); err != nil {
			return err
		}
	}
	return nil
}

// list compiles an array of schemas.
func (c *compiler) list(v any, ptr string) ([]*Schema, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, problem(ptr, "want an array of schemas, not %s", kind(v))
	}
	out := make([]*Schema, len(l))
	for i := range l {
		s, err := c.at(ptr + "/" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// schemaMap compiles an object of schemas (properties, $defs, ...).
func (c *compiler) schemaMap(m map[string]any, k, ptr string) (map[string]*Schema, error) {
	v, ok := m[k]
	if !ok {
		return nil, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, problem(ptr, "%s is an object of schemas, not %s", k, kind(v))
	}
	out := make(map[string]*Schema, len(o))
	for _, name := range slices.Sorted(maps.Keys(o)) {
		s, err := c.at(ptr + "/" + escape(name))
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, nil
}

// dependencies reads dependentRequired, or draft 4 to 7's dependencies,
// whose values are a property list or (mixed) a schema.
func (c *compiler) dependencies(s *Schema, m map[string]any, k, ptr string, mixed bool) error {
	v, ok := m[k]
	if !ok {
		return nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return problem(ptr, "%s is an object, not %s", k, kind(v))
	}
	for _, name := range slices.Sorted(maps.Keys(o)) {
		p := ptr + "/" + escape(name)
		if _, isList := o[name].([]any); isList || !mixed {
			names, err := strings_(o[name], p)
			if err != nil {
				return err
			}
			if s.dependentRequired == nil {
				s.dependentRequired = map[string][]string{}
			}
			s.dependentRequired[name] = append(s.dependentRequired[name], names...)
			continue
		}
		d, err := c.at(p)
		if err != nil {
			return err
		}
		if s.dependentSchemas == nil {
			s.dependentSchemas = map[string]*Schema{}
		}
		s.dependentSchemas[name] = d
	}
	return nil
}

var typeList = []string{"null", "boolean", "object", "array", "number", "string", "integer"}

func typeNames(v any, ptr string) ([]string, error) {
	names := []any{v}
	if l, ok := v.([]any); ok {
		names = l
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		s, ok := n.(string)
		if !ok || !slices.Contains(typeList, s) {
			return nil, problem(ptr, "%s is not a type: use one of %s", compact(n), strings.Join(typeList, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

func number(m map[string]any, k, ptr string) (*big.Rat, error) {
	v, ok := m[k]
	if !ok {
		return nil, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return nil, problem(ptr, "%s is a number, not %s", k, kind(v))
	}
	r, ok := rat(n)
	if !ok {
		return nil, problem(ptr, "%s is out of range", n)
	}
	return r, nil
}

func count(m map[string]any, k, ptr string) (int, error) {
	v, ok := m[k]
	if !ok {
		return -1, nil
	}
	n, isNum := v.(json.Number)
	r, inRange := rat(n)
	if !isNum || !inRange || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > 1<<31 {
		return 0, problem(ptr, "%s is a non-negative integer, not %s", k, compact(v))
	}
	return int(r.Num().Int64()), nil
}

func pattern(v any, ptr string) (*regexp.Regexp, error) {
	p, ok := v.(string)
	if !ok {
		return nil, problem(ptr, "a pattern is a string, not %s", kind(v))
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, problem(ptr, "%v", err)
	}
	return re, nil
}

func strings_(v any, ptr string) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, problem(ptr, "want an array of strings, not %s", kind(v))
	}
	out := make([]string, len(l))
	for i, e := range l {
		if out[i], ok = e.(string); !ok {
			return nil, problem(ptr, "want an array of strings, but item %d is %s", i, kind(e))
		}
	}
	return out, nil
}

// refPointer is the JSON Pointer a $ref names: "#" or "#/...", inside
// this document.
func refPointer(ref string) (string, error) {
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return "", fmt.Errorf("%q: the output schema may only $ref itself (#/$defs/...)", ref)
	}
	p, err := url.PathUnescape(ref[1:])
	if err != nil {
		return "", fmt.Errorf("%q: %v", ref, err)
	}
	return p, nil
}

// lookup finds the value at a JSON Pointer.
func lookup(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, fmt.Errorf("$ref %q: no such location in the schema", "#"+ptr)
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("$ref %q: no such location in the schema", "#"+ptr)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("$ref %q: no such location in the schema", "#"+ptr)
		}
	}
	return v, nil
}

// escape is a JSON Pointer reference token.
func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// rat is a JSON number's exact value; false past an exponent of ±10000
// (whose value would take megabytes).
func rat(n json.Number) (*big.Rat, bool) {
	s := string(n)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+")); err != nil || e > 10000 || e < -10000 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// kind names a JSON value's type, for messages.
func kind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		if r, ok := rat(v); ok && r.IsInt() {
			return "an integer"
		}
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// compact is a value as short JSON, for messages.
func compact(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	out := strings.TrimSpace(b.String())
	if len(out) > 60 {
		out = out[:57] + "..."
	}
	return out
}
