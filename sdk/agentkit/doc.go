// Package agentkit holds helpers for agent provider plugins: Base, which
// implements Info, ConfigSchema (the common model, env, capture_sessions
// and binary attributes around the agent's own), ParseStream and
// RewriteSession from declarations; tolerant config reading and checks;
// resume-session checks; the session directory encodings of well-known
// CLIs; order-preserving cwd rewriting of JSONL session files; and stream
// parsing helpers (JSON line decoding, readable tool-call arguments, error
// texts, session ids and usage sums).
//
// It depends only on the sdk package, so third-party agent plugins can use
// it as freely as the built-in ones; the host uses the encodings too, to
// resolve sdk.SessionStorage patterns. Its subpackage agentkittest holds
// the matching test helpers.
package agentkit
