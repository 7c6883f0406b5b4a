package sdk

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

func decodeConfig(v cty.Value, target any) error {
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	return gocty.FromCtyValue(v, target)
}
