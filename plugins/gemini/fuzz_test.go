package gemini

import (
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

// FuzzParse: no stream, however malformed, crashes the gemini parser.
func FuzzParse(f *testing.F) {
	agentkittest.FuzzParser(f, func() sdk.Parser { return NewParser() }, "testdata/gemini-stream-0.61.0.jsonl")
}
