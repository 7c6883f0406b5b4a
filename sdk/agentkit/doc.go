// Package agentkit holds helpers for agent provider plugins: tolerant
// config reading, the session directory encodings of well-known CLIs,
// order-preserving cwd rewriting of JSONL session files, readable tool-call
// arguments and JSON line decoding for stream parsers.
//
// It depends only on the sdk package, so third-party agent plugins can use
// it as freely as the built-in ones; the host uses the encodings too, to
// resolve sdk.SessionStorage patterns.
package agentkit
