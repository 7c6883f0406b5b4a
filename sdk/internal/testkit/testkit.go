// Package testkit holds what the conformance kits share.
package testkit

import (
	"fmt"
	"slices"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// Config completes v the way the host's decoder does: attributes and blocks
// of the schema that v (an object, or cty.NilVal for an empty block) lacks
// get their default (or null), single blocks null, list blocks empty.
func Config(v cty.Value, s sdk.Schema) sdk.Config {
	if v != cty.NilVal && (!v.Type().IsObjectType() || !v.IsKnown() || v.IsNull()) {
		return sdk.Config{Value: v}
	}
	return sdk.Config{Value: complete(v, s)}
}

func complete(v cty.Value, s sdk.Schema) cty.Value {
	vals := map[string]cty.Value{}
	if v != cty.NilVal {
		vals = v.AsValueMap()
		if vals == nil {
			vals = map[string]cty.Value{}
		}
	}
	for _, a := range s.Attributes {
		if _, ok := vals[a.Name]; ok {
			continue
		}
		if a.Default != cty.NilVal {
			vals[a.Name] = a.Default
		} else {
			vals[a.Name] = cty.NullVal(a.Type)
		}
	}
	for _, b := range s.Blocks {
		if _, ok := vals[b.TypeName]; ok {
			continue
		}
		ty := complete(cty.NilVal, b.Body).Type()
		if b.Nesting == sdk.NestingList {
			vals[b.TypeName] = cty.ListValEmpty(ty)
		} else {
			vals[b.TypeName] = cty.NullVal(ty)
		}
	}
	return cty.ObjectVal(vals)
}

// CheckInfo reports what is wrong with a component's Info.
func CheckInfo(info sdk.Info, kind sdk.Kind) []string {
	var problems []string
	if info.Name == "" {
		problems = append(problems, "Info.Name is empty")
	}
	if info.Kind != kind {
		problems = append(problems, fmt.Sprintf("Info.Kind is %q, want %q", info.Kind, kind))
	}
	if !slices.Contains(info.ProtocolVersions, sdk.ProtocolVersion) {
		problems = append(problems, fmt.Sprintf("Info.ProtocolVersions %v lacks sdk.ProtocolVersion %d", info.ProtocolVersions, sdk.ProtocolVersion))
	}
	if info.Version == "" {
		problems = append(problems, "Info.Version is empty")
	}
	return problems
}
