// Command sanddune-plugin-jsonl is an example third-party agent plugin: it
// drives "jsonl", a fictional coding-agent CLI that reads its prompt on
// stdin and prints one JSON object per line (testdata/fake-jsonl is a fake
// of it, used by the tests). It is written only against sdk and
// sdk/agentkit, as a third party writes one.
package main

import "github.com/missingstudio/sanddune/sdk"

func main() {
	sdk.Serve(sdk.ServeOpts{Agents: map[string]sdk.AgentProvider{"jsonl": New()}})
}
