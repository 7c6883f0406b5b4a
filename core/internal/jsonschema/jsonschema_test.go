package jsonschema

import (
	"strings"
	"testing"
)

func compile(t *testing.T, schema string) *Schema {
	t.Helper()
	doc, err := Decode(schema)
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	s, err := Compile(doc)
	if err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	return s
}

// TestKeywords: every keyword docs/configuration.md lists, with a value
// that matches and one that does not (the mismatch's path and a word of
// its message).
func TestKeywords(t *testing.T) {
	for _, tc := range []struct {
		name, schema, valid, invalid, path, msg string
	}{
		{"boolean true", `true`, `{"a": 1}`, ``, "", ""},
		{"boolean false", `{"properties": {"a": false}}`, `{}`, `{"a": 1}`, "/a", "no value"},
		{"type", `{"type": "string"}`, `"x"`, `1`, "", "want string"},
		{"type list", `{"type": ["string", "null"]}`, `null`, `true`, "", "string or null"},
		{"type integer", `{"type": "integer"}`, `2.0`, `2.5`, "", "want integer"},
		{"type number", `{"type": "number"}`, `2.5`, `"2.5"`, "", "want number"},
		{"type object", `{"type": "object"}`, `{}`, `[]`, "", "got array"},
		{"enum", `{"enum": ["a", 1, {"b": [2]}]}`, `{"b": [2.0]}`, `"c"`, "", "not one of"},
		{"const", `{"const": {"x": [1, "y"]}}`, `{"x": [1, "y"]}`, `{"x": [1]}`, "", "is not"},
		{"multipleOf", `{"multipleOf": 0.1}`, `0.3`, `0.35`, "", "multiple of 1/10"},
		{"minimum", `{"minimum": 1}`, `1`, `0.99`, "", "minimum 1"},
		{"maximum", `{"maximum": 1}`, `1`, `1.01`, "", "maximum 1"},
		{"exclusiveMinimum", `{"exclusiveMinimum": 1}`, `1.5`, `1`, "", "greater than 1"},
		{"exclusiveMaximum", `{"exclusiveMaximum": 1}`, `0.5`, `1`, "", "less than 1"},
		{"draft 4 exclusiveMaximum", `{"maximum": 3, "exclusiveMaximum": true}`, `2`, `3`, "", "less than 3"},
		{"draft 4 exclusiveMinimum false", `{"minimum": 3, "exclusiveMinimum": false}`, `3`, `2`, "", "minimum 3"},
		{"minLength", `{"minLength": 2}`, `"éé"`, `"é"`, "", "fewer than minLength 2"},
		{"maxLength", `{"maxLength": 2}`, `"éé"`, `"abc"`, "", "more than maxLength 2"},
		{"pattern", `{"pattern": "^[a-z]+-[0-9]+$"}`, `"ab-12"`, `"AB-12"`, "", "pattern"},
		{"items", `{"items": {"type": "integer"}}`, `[1, 2]`, `[1, "2"]`, "/1", "want integer"},
		{"prefixItems", `{"prefixItems": [{"type": "string"}], "items": false}`, `["a"]`, `["a", 1]`, "/1", "no value"},
		{"items array and additionalItems", `{"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}`, `["a", 1]`, `["a", "b"]`, "/1", "want integer"},
		{"contains", `{"contains": {"const": 3}}`, `[1, 3]`, `[1, 2]`, "", "fewer than 1"},
		{"minContains", `{"contains": {"type": "integer"}, "minContains": 2}`, `[1, 2, "a"]`, `[1, "a"]`, "", "fewer than 2"},
		{"maxContains", `{"contains": {"type": "integer"}, "maxContains": 1}`, `[1, "a"]`, `[1, 2]`, "", "more than maxContains 1"},
		{"minItems", `{"minItems": 1}`, `[0]`, `[]`, "", "fewer than minItems"},
		{"maxItems", `{"maxItems": 1}`, `[0]`, `[0, 1]`, "", "more than maxItems"},
		{"uniqueItems", `{"uniqueItems": true}`, `[1, "1", [1]]`, `[{"a": 1}, {"a": 1.0}]`, "", "items 0 and 1 are equal"},
		{"properties", `{"properties": {"a/b": {"type": "string"}}}`, `{"a/b": "x", "c": 1}`, `{"a/b": 1}`, "/a~1b", "want string"},
		{"patternProperties", `{"patternProperties": {"^x-": {"type": "integer"}}}`, `{"x-a": 1, "y": "s"}`, `{"x-a": "s"}`, "/x-a", "want integer"},
		{"additionalProperties false", `{"properties": {"a": {}}, "additionalProperties": false}`, `{"a": 1}`, `{"a": 1, "b": 2}`, "", `property "b" is not allowed`},
		{"additionalProperties schema", `{"patternProperties": {"^a": {}}, "additionalProperties": {"type": "string"}}`, `{"ab": 1, "c": "s"}`, `{"c": 1}`, "/c", "want string"},
		{"required", `{"required": ["id", "title"]}`, `{"id": 1, "title": "t"}`, `{"id": 1}`, "", `missing required property "title"`},
		{"propertyNames", `{"propertyNames": {"pattern": "^[a-z]+$"}}`, `{"ab": 1}`, `{"aB": 1}`, "", `property name "aB"`},
		{"minProperties", `{"minProperties": 1}`, `{"a": 1}`, `{}`, "", "fewer than minProperties"},
		{"maxProperties", `{"maxProperties": 1}`, `{"a": 1}`, `{"a": 1, "b": 2}`, "", "more than maxProperties"},
		{"dependentRequired", `{"dependentRequired": {"a": ["b"]}}`, `{"a": 1, "b": 2}`, `{"a": 1}`, "", `property "a" needs property "b"`},
		{"dependentSchemas", `{"dependentSchemas": {"a": {"required": ["b"]}}}`, `{"b": 1}`, `{"a": 1}`, "", `missing required property "b"`},
		{"dependencies list", `{"dependencies": {"a": ["b"]}}`, `{"b": 1}`, `{"a": 1}`, "", `needs property "b"`},
		{"dependencies schema", `{"dependencies": {"a": {"properties": {"b": {"type": "string"}}}}}`, `{"a": 1, "b": "s"}`, `{"a": 1, "b": 2}`, "/b", "want string"},
		{"allOf", `{"allOf": [{"type": "integer"}, {"minimum": 2}]}`, `3`, `1`, "", "minimum 2"},
		{"anyOf", `{"anyOf": [{"type": "integer"}, {"type": "string"}]}`, `"s"`, `true`, "", "none of anyOf"},
		{"oneOf none", `{"oneOf": [{"type": "integer"}, {"minimum": 2}]}`, `1`, `1.5`, "", "none of oneOf"},
		{"oneOf two", `{"oneOf": [{"type": "integer"}, {"minimum": 2}]}`, `2.5e0`, `3`, "", "oneOf's schemas 0 and 1"},
		{"not", `{"not": {"type": "string"}}`, `1`, `"s"`, "", "matches the schema in not"},
		{"if then", `{"if": {"properties": {"kind": {"const": "bug"}}}, "then": {"required": ["repro"]}}`, `{"kind": "task"}`, `{"kind": "bug"}`, "", `missing required property "repro"`},
		{"if else", `{"if": {"type": "string"}, "else": {"type": "integer"}}`, `"s"`, `1.5`, "", "want integer"},
		{"$ref to $defs", `{"$defs": {"id": {"type": "integer"}}, "properties": {"id": {"$ref": "#/$defs/id"}}}`, `{"id": 1}`, `{"id": "1"}`, "/id", "want integer"},
		{"$ref to definitions", `{"definitions": {"id": {"type": "integer"}}, "items": {"$ref": "#/definitions/id"}}`, `[1]`, `["1"]`, "/0", "want integer"},
		{"recursive $ref", `{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}`, `{"children": [{"children": []}]}`, `{"children": [{"children": [1]}]}`, "/children/0/children/0", "want object"},
		{"draft 7 ignores $ref's siblings", `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"n": {"type": "integer"}}, "$ref": "#/definitions/n", "minimum": 5}`, `4`, `"4"`, "", "want integer"},
		{"$ref beside other keywords", `{"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 5}`, `5`, `4`, "", "minimum 5"},
		{"draft 7 format date-time", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "date-time"}`, `"2026-11-28T01:02:03.5z"`, `"2026-11-28 01:02"`, "", "not a valid date-time"},
		{"draft 7 format date", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "date"}`, `"2026-02-28"`, `"2026-02-30"`, "", "not a valid date"},
		{"draft 7 format time", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "time"}`, `"01:02:03+01:00"`, `"25:00:00Z"`, "", "not a valid time"},
		{"draft 6 format email", `{"$schema": "http://json-schema.org/draft-06/schema#", "format": "email"}`, `"a.b@example.test"`, `"a.b at example"`, "", "not a valid email"},
		{"draft 4 format hostname", `{"$schema": "http://json-schema.org/draft-04/schema#", "format": "hostname"}`, `"api.example.test"`, `"-bad-.test"`, "", "not a valid hostname"},
		{"draft 7 format ipv4", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "ipv4"}`, `"10.0.0.1"`, `"::1"`, "", "not a valid ipv4"},
		{"draft 7 format ipv6", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "ipv6"}`, `"::1"`, `"10.0.0.1"`, "", "not a valid ipv6"},
		{"draft 7 format uri", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "uri"}`, `"https://example.test/a"`, `"/a"`, "", "not a valid uri"},
		{"draft 7 format uri-reference", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "uri-reference"}`, `"/a?b"`, `"%zz"`, "", "not a valid uri-reference"},
		{"draft 7 format uuid", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "uuid"}`, `"3f6c2a9e-0000-4000-8000-00000000abcd"`, `"3f6c2a9e"`, "", "not a valid uuid"},
		{"draft 7 format regex", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "regex"}`, `"^a+$"`, `"("`, "", "not a valid regex"},
		{"draft 7 format on a non-string", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "email"}`, `12`, ``, "", ""},
		{"annotations and format are not asserted", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.test/s", "$comment": "c", "title": "t", "description": "d", "default": 1, "examples": [1], "format": "email", "contentMediaType": "text/plain", "deprecated": true, "readOnly": true}`, `"not an email"`, ``, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := compile(t, tc.schema)
			v, err := Decode(tc.valid)
			if err != nil {
				t.Fatal(err)
			}
			if e := s.Validate(v); e != nil {
				t.Fatalf("%s rejected %s: %+v", tc.schema, tc.valid, e)
			}
			if tc.invalid == "" {
				return
			}
			if v, err = Decode(tc.invalid); err != nil {
				t.Fatal(err)
			}
			e := s.Validate(v)
			if e == nil {
				t.Fatalf("%s accepted %s", tc.schema, tc.invalid)
			}
			if e.InstancePath != tc.path || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("%s on %s: got %q at %q, want %q at %q", tc.schema, tc.invalid, e.Message, e.InstancePath, tc.msg, tc.path)
			}
		})
	}
}

// TestBadSchemas: Compile names the offending keyword's location.
func TestBadSchemas(t *testing.T) {
	for _, tc := range []struct{ name, schema, msg string }{
		{"not a schema", `12`, "at the root: a schema is an object or a boolean, not an integer"},
		{"unknown type", `{"type": 12}`, "at /type: 12 is not a type"},
		{"unknown type name", `{"properties": {"a": {"type": ["string", "text"]}}}`, `at /properties/a/type: "text" is not a type`},
		{"enum not an array", `{"enum": "a"}`, "at /enum: enum is an array"},
		{"minimum not a number", `{"minimum": "1"}`, "at /minimum: minimum is a number, not a string"},
		{"multipleOf zero", `{"multipleOf": 0}`, "at /multipleOf: multipleOf must be greater than 0"},
		{"exclusiveMaximum null", `{"exclusiveMaximum": null}`, "at /exclusiveMaximum"},
		{"negative minLength", `{"minLength": -1}`, "at /minLength: minLength is a non-negative integer, not -1"},
		{"fractional maxItems", `{"maxItems": 1.5}`, "at /maxItems: maxItems is a non-negative integer"},
		{"bad pattern", `{"pattern": "("}`, "at /pattern: error parsing regexp"},
		{"bad patternProperties key", `{"patternProperties": {"(": {}}}`, "at /patternProperties/(: error parsing regexp"},
		{"format not a string", `{"format": 1}`, "at /format: format is a string"},
		{"uniqueItems not a boolean", `{"uniqueItems": 1}`, "at /uniqueItems: uniqueItems is a boolean"},
		{"properties not an object", `{"properties": []}`, "at /properties: properties is an object of schemas"},
		{"the first bad property in name order", `{"properties": {"b": {"type": 1}, "a": {"type": 2}}}`, "at /properties/a/type: 2 is not a type"},
		{"bad property schema", `{"properties": {"a": "string"}}`, "at /properties/a: a schema is an object or a boolean, not a string"},
		{"required not strings", `{"required": ["a", 1]}`, "at /required: want an array of strings, but item 1 is an integer"},
		{"dependentRequired not a list", `{"dependentRequired": {"a": "b"}}`, "at /dependentRequired/a: want an array of strings"},
		{"empty anyOf", `{"anyOf": []}`, "at /anyOf: anyOf needs at least one schema"},
		{"allOf not an array", `{"allOf": {}}`, "at /allOf: want an array of schemas"},
		{"bad schema in $defs", `{"$defs": {"x": {"type": "text"}}}`, `at /$defs/x/type: "text" is not a type`},
		{"$ref not a string", `{"$ref": 1}`, "at /$ref: $ref is a string"},
		{"external $ref", `{"$ref": "other.json"}`, `"other.json": the output schema may only $ref itself`},
		{"anchor $ref", `{"$ref": "#item"}`, "may only $ref itself"},
		{"dangling $ref", `{"items": {"$ref": "#/$defs/missing"}}`, `$ref "#/$defs/missing": no such location`},
		{"unevaluatedProperties", `{"unevaluatedProperties": false}`, "at /unevaluatedProperties: unevaluatedProperties is not supported"},
		{"nested $id", `{"$id": "https://example.test/s", "items": {"$id": "item"}}`, "at /items/$id: $id is supported only at the root"},
		{"$dynamicRef", `{"items": {"$dynamicRef": "#node"}}`, "at /items/$dynamicRef: $dynamicRef is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := Decode(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Compile(doc)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%s: error %v, want one with %q", tc.schema, err, tc.msg)
			}
		})
	}
}

func TestRefLoopFails(t *testing.T) {
	s := compile(t, `{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`)
	if e := s.Validate("x"); e == nil || !strings.Contains(e.Message, "$refs loop") {
		t.Fatalf("got %+v, want the loop reported", e)
	}
}

// TestRefLoopThroughAnyOfFails: a loop met again in each branch of an
// anyOf is reported once per branch, not followed down every branch
// again (which never ended).
func TestRefLoopThroughAnyOfFails(t *testing.T) {
	s := compile(t, `{"anyOf": [{"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}]}`)
	if e := s.Validate("x"); e == nil || !strings.Contains(e.Message, "$refs loop") {
		t.Fatalf("got %+v, want the loop reported", e)
	}
	nested := compile(t, `{"properties": {"a": {"$ref": "#"}}, "anyOf": [{"$ref": "#/$defs/x"}, {"type": "object"}], "$defs": {"x": {"$ref": "#"}}}`)
	if e := nested.Validate(mustDecode(t, `{"a": {"a": {}}}`)); e != nil {
		t.Fatalf("a $ref reached again at a deeper value is no loop: %+v", e)
	}
}

func TestDecode(t *testing.T) {
	for _, bad := range []string{``, `{"a": }`, `{} {}`, `[1] x`} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
	if _, err := Decode(" {\"a\": [1e400]}\n"); err != nil {
		t.Errorf("Decode: %v", err)
	}
	s := compile(t, `{"maximum": 1}`)
	if e := s.Validate(mustDecode(t, `1e99999`)); e == nil || !strings.Contains(e.Message, "too large") {
		t.Errorf("a huge exponent: got %+v", e)
	}
}

func mustDecode(t *testing.T, text string) any {
	t.Helper()
	v, err := Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
