package testkit

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

func TestConfig(t *testing.T) {
	t.Parallel()
	s := sdk.Schema{
		Attributes: []sdk.Attribute{
			{Name: "image", Type: cty.String, Required: true},
			{Name: "network", Type: cty.String, Default: cty.StringVal("bridge")},
		},
		Blocks: []sdk.NestedBlock{
			{TypeName: "mount", Nesting: sdk.NestingList, Body: sdk.Schema{Attributes: []sdk.Attribute{{Name: "path", Type: cty.String}}}},
			{TypeName: "limits", Nesting: sdk.NestingSingle},
		},
	}
	mountTy := cty.Object(map[string]cty.Type{"path": cty.String})
	got := Config(cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal("x")}), s).Value
	want := cty.ObjectVal(map[string]cty.Value{
		"image":   cty.StringVal("x"),
		"network": cty.StringVal("bridge"),
		"mount":   cty.ListValEmpty(mountTy),
		"limits":  cty.NullVal(cty.EmptyObject),
	})
	if !got.RawEquals(want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	if got := Config(cty.NilVal, sdk.Schema{}).Value; !got.RawEquals(cty.EmptyObjectVal) {
		t.Errorf("empty schema: %#v", got)
	}
}
