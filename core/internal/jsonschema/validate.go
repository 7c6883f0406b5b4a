package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a value that does not match: the JSON Pointer of the value in
// the instance ("" for the instance itself) and what is wrong there.
type Error struct {
	InstancePath string
	Message      string
}

// refs are the $refs being followed, each at the value (its path) it is
// checking: one met again there loops without reaching a deeper value
// ({"$ref": "#"}), and fails instead of recursing forever.
type refs map[refAt]bool

type refAt struct {
	s    *Schema
	path string
}

// Validate checks a decoded value: nil, or the first mismatch found,
// innermost.
func (s *Schema) Validate(v any) *Error {
	return s.check(v, "", refs{})
}

func fail(path, format string, args ...any) *Error {
	return &Error{InstancePath: path, Message: fmt.Sprintf(format, args...)}
}

func (s *Schema) check(v any, path string, active refs) *Error {
	if s.never {
		return fail(path, "no value is allowed here")
	}
	if s.ref != nil {
		at := refAt{s, path}
		if active[at] {
			return fail(path, "the schema's $refs loop without reaching a value")
		}
		active[at] = true
		e := s.ref.check(v, path, active)
		delete(active, at)
		if e != nil {
			return e
		}
	}
	if len(s.types) > 0 && !slices.ContainsFunc(s.types, func(t string) bool { return isType(v, t) }) {
		return fail(path, "got %s, want %s", typeOf(v), strings.Join(s.types, " or "))
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return equal(v, e) }) {
		return fail(path, "%s is not one of %s", compact(v), compact(s.enum))
	}
	if s.cnst != nil && !equal(v, *s.cnst) {
		return fail(path, "%s is not %s", compact(v), compact(*s.cnst))
	}
	var e *Error
	switch x := v.(type) {
	case json.Number:
		e = s.checkNumber(x, path)
	case string:
		e = s.checkString(x, path)
	case []any:
		e = s.checkArray(x, path, active)
	case map[string]any:
		e = s.checkObject(x, path, active)
	}
	if e != nil {
		return e
	}
	return s.checkApplicators(v, path, active)
}

func (s *Schema) checkNumber(n json.Number, path string) *Error {
	if s.multipleOf == nil && s.minimum == nil && s.maximum == nil && s.exclusiveMin == nil && s.exclusiveMax == nil {
		return nil
	}
	r, ok := rat(n)
	if !ok {
		return fail(path, "%s is too large to compare", n)
	}
	switch {
	case s.minimum != nil && r.Cmp(s.minimum) < 0:
		return fail(path, "%s is less than the minimum %s", n, s.minimum.RatString())
	case s.exclusiveMin != nil && r.Cmp(s.exclusiveMin) <= 0:
		return fail(path, "%s is not greater than %s", n, s.exclusiveMin.RatString())
	case s.maximum != nil && r.Cmp(s.maximum) > 0:
		return fail(path, "%s is greater than the maximum %s", n, s.maximum.RatString())
	case s.exclusiveMax != nil && r.Cmp(s.exclusiveMax) >= 0:
		return fail(path, "%s is not less than %s", n, s.exclusiveMax.RatString())
	case s.multipleOf != nil && !new(big.Rat).Quo(r, s.multipleOf).IsInt():
		return fail(path, "%s is not a multiple of %s", n, s.multipleOf.RatString())
	}
	return nil
}

func (s *Schema) checkString(str, path string) *Error {
	if s.minLength > 0 || s.maxLength >= 0 {
		n := utf8.RuneCountInString(str)
		if n < s.minLength {
			return fail(path, "%d characters, fewer than minLength %d", n, s.minLength)
		}
		if s.maxLength >= 0 && n > s.maxLength {
			return fail(path, "%d characters, more than maxLength %d", n, s.maxLength)
		}
	}
	if s.pattern != nil && !s.pattern.MatchString(str) {
		return fail(path, "%s does not match the pattern %s", compact(str), compact(s.pattern.String()))
	}
	if s.formatOK != nil && !s.formatOK(str) {
		return fail(path, "%s is not a valid %s", compact(str), s.format)
	}
	return nil
}

func (s *Schema) checkArray(a []any, path string, active refs) *Error {
	if len(a) < s.minItems {
		return fail(path, "%d items, fewer than minItems %d", len(a), s.minItems)
	}
	if s.maxItems >= 0 && len(a) > s.maxItems {
		return fail(path, "%d items, more than maxItems %d", len(a), s.maxItems)
	}
	if s.uniqueItems {
		for i := range a {
			for j := i + 1; j < len(a); j++ {
				if equal(a[i], a[j]) {
					return fail(path, "items %d and %d are equal, and uniqueItems is set", i, j)
				}
			}
		}
	}
	for i, item := range a {
		var sub *Schema
		switch {
		case i < len(s.prefixItems):
			sub = s.prefixItems[i]
		case s.items != nil:
			sub = s.items
		default:
			continue
		}
		if e := sub.check(item, path+"/"+strconv.Itoa(i), active); e != nil {
			return e
		}
	}
	if s.contains != nil {
		n := 0
		for i, item := range a {
			if s.contains.check(item, path+"/"+strconv.Itoa(i), active) == nil {
				n++
			}
		}
		min := s.minContains
		if min < 0 {
			min = 1
		}
		if n < min {
			return fail(path, "%d items match contains, fewer than %d", n, min)
		}
		if s.maxContains >= 0 && n > s.maxContains {
			return fail(path, "%d items match contains, more than maxContains %d", n, s.maxContains)
		}
	}
	return nil
}

func (s *Schema) checkObject(o map[string]any, path string, active refs) *Error {
	if len(o) < s.minProperties {
		return fail(path, "%d properties, fewer than minProperties %d", len(o), s.minProperties)
	}
	if s.maxProperties >= 0 && len(o) > s.maxProperties {
		return fail(path, "%d properties, more than maxProperties %d", len(o), s.maxProperties)
	}
	for _, k := range s.required {
		if _, ok := o[k]; !ok {
			return fail(path, "missing required property %s", compact(k))
		}
	}
	keys := slices.Sorted(maps.Keys(o))
	for _, k := range keys {
		if need, ok := s.dependentRequired[k]; ok {
			for _, n := range need {
				if _, ok := o[n]; !ok {
					return fail(path, "property %s needs property %s", compact(k), compact(n))
				}
			}
		}
	}
	for _, k := range keys {
		p := path + "/" + escape(k)
		if s.propertyNames != nil {
			if e := s.propertyNames.check(k, p, active); e != nil {
				return fail(path, "property name %s: %s", compact(k), e.Message)
			}
		}
		sub, matched := s.properties[k]
		if matched {
			if e := sub.check(o[k], p, active); e != nil {
				return e
			}
		}
		for _, pp := range s.patternProperties {
			if pp.re.MatchString(k) {
				matched = true
				if e := pp.s.check(o[k], p, active); e != nil {
					return e
				}
			}
		}
		if !matched && s.additionalProperties != nil {
			if s.additionalProperties.never {
				return fail(path, "property %s is not allowed (additionalProperties)", compact(k))
			}
			if e := s.additionalProperties.check(o[k], p, active); e != nil {
				return e
			}
		}
	}
	for _, k := range keys {
		if d, ok := s.dependentSchemas[k]; ok {
			if e := d.check(o, path, active); e != nil {
				return e
			}
		}
	}
	return nil
}

func (s *Schema) checkApplicators(v any, path string, active refs) *Error {
	for _, a := range s.allOf {
		if e := a.check(v, path, active); e != nil {
			return e
		}
	}
	if len(s.anyOf) > 0 {
		var first *Error
		for _, a := range s.anyOf {
			e := a.check(v, path, active)
			if e == nil {
				first = nil
				break
			}
			if first == nil {
				first = e
			}
		}
		if first != nil {
			return fail(first.InstancePath, "matches none of anyOf's schemas (the first: %s)", first.Message)
		}
	}
	if len(s.oneOf) > 0 {
		var matched []int
		var first *Error
		for i, a := range s.oneOf {
			if e := a.check(v, path, active); e == nil {
				matched = append(matched, i)
			} else if first == nil {
				first = e
			}
		}
		switch {
		case len(matched) == 0:
			return fail(first.InstancePath, "matches none of oneOf's schemas (the first: %s)", first.Message)
		case len(matched) > 1:
			return fail(path, "matches oneOf's schemas %d and %d, want exactly one", matched[0], matched[1])
		}
	}
	if s.not != nil && s.not.check(v, path, active) == nil {
		return fail(path, "matches the schema in not")
	}
	if s.cond != nil {
		branch := s.els
		if s.cond.check(v, path, active) == nil {
			branch = s.then
		}
		if branch != nil {
			if e := branch.check(v, path, active); e != nil {
				return e
			}
		}
	}
	return nil
}

func isType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case json.Number:
		if t == "number" {
			return true
		}
		r, ok := rat(x)
		return t == "integer" && ok && r.IsInt()
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

func typeOf(v any) string {
	for _, t := range []string{"null", "boolean", "integer", "number", "string", "array", "object"} {
		if isType(v, t) {
			return t
		}
	}
	return fmt.Sprintf("%T", v)
}

// equal is JSON equality: numbers by value, objects by their members.
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := rat(x)
		ry, oky := rat(y)
		if !okx || !oky {
			return x == y
		}
		return rx.Cmp(ry) == 0
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equal)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return a == b
}
