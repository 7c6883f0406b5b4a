package agentkit

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// attr returns the named attribute of a config object, or cty.NilVal when
// the config is not a known object or lacks the attribute.
func attr(cfg sdk.Config, name string) cty.Value {
	v := cfg.Value
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return cty.NilVal
	}
	if v.Type().IsObjectType() {
		if !v.Type().HasAttribute(name) {
			return cty.NilVal
		}
		return v.GetAttr(name)
	}
	if !v.HasIndex(cty.StringVal(name)).True() {
		return cty.NilVal
	}
	return v.Index(cty.StringVal(name))
}

// String returns a string attribute, or "" when it is missing, null or not
// a string.
func String(cfg sdk.Config, name string) string {
	v := attr(cfg, name)
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// boolAttr returns a bool attribute, or def when it is missing, null or not a
// bool.
func boolAttr(cfg sdk.Config, name string, def bool) bool {
	v := attr(cfg, name)
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		return def
	}
	return v.True()
}

// stringMap returns a map(string) or object-of-strings attribute; null or
// unknown elements are skipped. It returns nil when the attribute is absent.
func stringMap(cfg sdk.Config, name string) map[string]string {
	v := attr(cfg, name)
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.CanIterateElements() {
		return nil
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if k.Type() != cty.String || e.IsNull() || !e.IsKnown() || e.Type() != cty.String {
			continue
		}
		out[k.AsString()] = e.AsString()
	}
	return out
}

// CheckOneOf reports value when it is set and not one of allowed.
func CheckOneOf(value string, allowed []string, attrName string) sdk.Diagnostics {
	if value == "" || slices.Contains(allowed, value) {
		return nil
	}
	return sdk.Diagnostics{{
		Summary:   fmt.Sprintf("Invalid %s %q", attrName, value),
		Detail:    "Allowed values: " + strings.Join(allowed, ", ") + ".",
		Attribute: attrName,
	}}
}

var sessionID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckSessionID rejects session ids that could be mistaken for a flag, or
// that carry path separators or glob characters. Every known CLI's ids
// (UUIDs, ses_..., thread names without spaces) pass.
func CheckSessionID(id string) error {
	if len(id) > 200 || !sessionID.MatchString(id) {
		return fmt.Errorf("invalid session id %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", id)
	}
	return nil
}

// checkNotEmpty reports a string attribute that is set to "" (a null or
// absent attribute is fine: it takes its default).
func checkNotEmpty(cfg sdk.Config, name string) sdk.Diagnostics {
	v := attr(cfg, name)
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || v.Type() != cty.String || v.AsString() != "" {
		return nil
	}
	return sdk.Diagnostics{{Summary: "Empty " + name, Detail: name + " must not be empty.", Attribute: name}}
}
