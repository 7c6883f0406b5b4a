package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL style (sanddune fmt). A file with
// syntax errors is returned unchanged with the errors; render them with
// WriteDiagnostics(w, map[string]*hcl.File{filename: {Bytes: src}}, ...).
// JSON files are returned unchanged with a warning.
func Format(src []byte, filename string) ([]byte, hcl.Diagnostics) {
	if isJSON(filename) {
		return src, hcl.Diagnostics{{
			Severity: hcl.DiagWarning,
			Summary:  "JSON file left unchanged",
			Detail:   fmt.Sprintf("%s uses JSON syntax; sanddune fmt formats native HCL syntax only.", filename),
		}}
	}
	if diags := CheckSource(src, filename); diags.HasErrors() {
		return src, diags
	}
	if _, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos); diags.HasErrors() {
		return src, diags
	}
	return hclwrite.Format(src), nil
}
