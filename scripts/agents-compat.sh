#!/usr/bin/env bash
# Checks the command lines the agent plugins build against the real CLIs.
#
# 1. Installs Claude Code, Codex, opencode, pi, Gemini CLI and the Copilot CLI
#    from the npm registry at pinned versions (agents-install.sh caches them).
# 2. Makes sure the plugins' golden command files (plugins/*/testdata/
#    commands.golden, one built command per line) are current.
# 3. Replays every golden command through the real CLI's own parser, with
#    the method that CLI allows without running a model turn:
#      claude    runs the command with no credentials: a command that parses
#                stops at "Not logged in" (resumes first find their session);
#      codex     appends --help (clap rejects unknown arguments first);
#      opencode  checks flags, value types and choices against its --help
#                (yargs accepts unknown flags silently);
#      pi        checks flags against its --help, then appends --help (pi
#                reports bad values and resolves --session/--fork first);
#      copilot   appends --help (it rejects unknown flags and bad values
#                first).
#      gemini    checks flags against its --help, then runs a print command
#                with no credentials: it stops at the missing auth method.
#    Negative controls prove each method rejects a bad command line.
# 4. Runs core/internal/session's round trips against the real claude and pi.
#
# No credentials are passed and every API base URL points at a closed local
# port, so no model is ever contacted. Needs go, node and npm.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
log() { echo "agents-compat: $*"; }
start=$(date +%s)

bin="$(bash "$here/agents-install.sh")"
log "CLIs ready ($(( $(date +%s) - start ))s)"

cd "$repo"
log "checking that the golden command files are current"
go test -count=1 -run '^TestBuildCommandGolden$' ./plugins/claude ./plugins/codex ./plugins/opencode ./plugins/pi ./plugins/copilot ./plugins/gemini >/dev/null

checker="$(mktemp "${TMPDIR:-/tmp}/agents-compat.XXXXXX.js")"
trap 'rm -f "$checker"' EXIT
cat >"$checker" <<'EOF'
const { spawnSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const [bin, ...goldens] = process.argv.slice(2);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "agents-compat-"));
// The agent's cwd holds dots, underscores and spaces, like real repos.
const cwd = path.join(work, "work dir", "my repo_v1.2");
fs.mkdirSync(cwd, { recursive: true });
const realCwd = fs.realpathSync(cwd);
const isRoot = process.getuid && process.getuid() === 0;
let homes = 0;

function freshHome() {
  const h = path.join(work, `home${homes++}`);
  fs.mkdirSync(h);
  return h;
}

function env(home, extra) {
  return {
    PATH: process.env.PATH, HOME: home, LC_ALL: "C", TERM: "dumb", NO_COLOR: "1",
    ANTHROPIC_BASE_URL: "http://127.0.0.1:9", OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1", DISABLE_TELEMETRY: "1",
    PI_OFFLINE: "1", PI_TELEMETRY: "0", OPENCODE_DISABLE_AUTOUPDATE: "1",
    ...extra,
  };
}

function run(argv, { home = freshHome(), stdin = "", extraEnv = {} } = {}) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd, env: env(home, extraEnv), input: stdin, timeout: 90000, encoding: "utf8" });
  return { code: r.status, out: (r.stdout || "") + (r.stderr || "") + (r.error ? String(r.error) : "") };
}

// Drops an interactive prompt (and the "--" before it): the parser checks
// must not treat --help as part of it.
function withoutPrompt(c) {
  const argv = c.argv.slice();
  if (c.prompt !== undefined) {
    argv.pop();
    if (argv[argv.length - 1] === "--") argv.pop();
  }
  return argv;
}

const bad = /error:|unknown option|unexpected argument|Warning:|No conversation found|requires|cannot be used/i;

// Session files where the CLIs look for them (see sdk/agentkit encodings).
function claudeSession(home, id) {
  const dir = path.join(home, ".claude", "projects", realCwd.replace(/[^a-zA-Z0-9]/g, "-"));
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${id}.jsonl`), JSON.stringify({
    parentUuid: null, isSidechain: false, type: "user", message: { role: "user", content: "hello" },
    uuid: "c5798fe6-1a09-4681-b372-1269ea037271", timestamp: "2026-07-01T10:00:00.000Z",
    cwd: realCwd, sessionId: id, version: "2.1.197", userType: "external",
  }) + "\n");
}

function piSession(home, id) {
  const enc = "--" + realCwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-") + "--";
  const dir = path.join(home, ".pi", "agent", "sessions", enc);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `2026-07-01T10-20-00-000Z_${id}.jsonl`),
    JSON.stringify({ type: "session", version: 3, id, timestamp: "2026-07-01T10:20:00.000Z", cwd: realCwd }) + "\n");
}

function geminiSession(home, id) {
  // The project directory: the CLI's slug of the cwd's base name.
  const slug = path.basename(realCwd).toLowerCase().replace(/[^a-z0-9]/g, "-").replace(/-+/g, "-").replace(/^-|-$/g, "") || "project";
  const dir = path.join(home, ".gemini", "tmp", slug, "chats");
  fs.mkdirSync(dir, { recursive: true });
  const t = "2026-07-01T10:00:00.000Z";
  fs.writeFileSync(path.join(dir, `session-2026-07-01T10-00-${id.slice(0, 8)}.jsonl`), [
    { sessionId: id, projectHash: "0", startTime: t, lastUpdated: t, kind: "main" },
    { id: "m1", timestamp: t, type: "user", content: [{ text: "hello" }] },
    { id: "m2", timestamp: t, type: "gemini", content: "hi", model: "gemini-2.5-flash" },
  ].map((r) => JSON.stringify(r)).join("\n") + "\n");
}

// Options listed by a yargs (opencode, gemini) or pi help text.
function helpOptions(text, style) {
  const opts = new Map();
  let cur = null;
  for (const line of text.split("\n")) {
    const m = style === "yargs"
      ? line.match(/^\s{2,}(?:-(\w), )?\s*--([\w-]+)/)
      : line.match(/^\s{2,}--([\w-]+)(?:, (-\w+))?(\s+<[^>]+>)?/);
    if (m) {
      cur = style === "yargs"
        ? { names: [m[2], m[1]].filter(Boolean), text: line }
        : { names: [m[1], m[2] && m[2].slice(1)].filter(Boolean), text: line, value: !!m[3] };
      for (const n of cur.names) opts.set(n, cur);
    } else if (cur && /^\s{6,}\S/.test(line)) {
      cur.text += " " + line.trim();
    } else {
      cur = null;
    }
  }
  for (const o of new Set(opts.values())) {
    if (style === "yargs") o.value = !/\[boolean\]/.test(o.text);
    const c = o.text.match(/\[choices: ([^\]]*)\]/);
    if (c) o.choices = c[1].split(",").map((s) => s.trim().replace(/^"|"$/g, ""));
  }
  return opts;
}

// Checks each flag of args against opts; returns a problem or "".
function checkFlags(args, opts) {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith("-") || a === "-" || a === "--") continue;
    const [name, inline] = a.replace(/^--?/, "").split(/=(.*)/s);
    const o = opts.get(name);
    if (!o) return `flag ${a} is not in --help`;
    if (!o.value) continue;
    const v = inline !== undefined ? inline : args[++i];
    if (v === undefined) return `flag ${a} needs a value`;
    if (o.choices && !o.choices.includes(v)) return `${a} ${v}: not one of ${o.choices.join(", ")}`;
  }
  return "";
}

const helps = {};
function help(argv) {
  const k = argv.join(" ");
  if (!helps[k]) helps[k] = run([...argv, "--help"]).out;
  return helps[k];
}

const checks = {
  // gemini: flags, value types and choices against its --help (interactive
  // commands stop there: the CLI would start its UI); a print command runs
  // without credentials, which a command that parses reaches (exit 41;
  // resumes first find their session, exit 42 otherwise).
  gemini(c, argv) {
    const problem = checkFlags(argv.slice(1), helpOptions(help([argv[0]]), "yargs"));
    if (problem || c.mode !== "print") return problem;
    const home = freshHome();
    if (c.resume_session_id) geminiSession(home, c.resume_session_id);
    const r = run(argv, { home, stdin: c.stdin, extraEnv: c.env });
    if (r.code !== 41 || /Unknown argument|Invalid values|Error resuming/i.test(r.out)) return `exit ${r.code}: ${r.out.slice(0, 400)}`;
    return "";
  },
  claude(c, argv) {
    const home = freshHome();
    if (c.resume_session_id) claudeSession(home, c.resume_session_id);
    // Root needs IS_SANDBOX=1 for the bypass; plugins add it when they know
    // the sandbox runs the agent as root.
    // Without a TTY claude reads stdin even in interactive mode.
    const r = run(argv, { home, stdin: c.stdin || "compat check", extraEnv: { ...(isRoot ? { IS_SANDBOX: "1" } : {}), ...c.env } });
    if (!r.out.includes("Not logged in") || bad.test(r.out)) return `exit ${r.code}: ${r.out.slice(0, 400)}`;
    return "";
  },
  codex(c, argv) {
    const r = run([...withoutPrompt({ ...c, argv }), "--help"]);
    if (r.code !== 0 || !r.out.includes("Usage:")) return `exit ${r.code}: ${r.out.slice(0, 400)}`;
    return "";
  },
  opencode(c, argv) {
    const sub = argv[1] === "run" ? ["run"] : [];
    const opts = helpOptions(help([argv[0], ...sub]), "yargs");
    const problem = checkFlags(argv.slice(1 + sub.length), opts);
    if (problem) return problem;
    const r = run([...argv, "--help"]);
    if (r.code !== 0) return `--help exit ${r.code}: ${r.out.slice(0, 400)}`;
    return "";
  },
  copilot(c, argv) {
    // Its parser rejects unknown flags and bad values before --help.
    const r = run([...argv, "--help"]);
    if (r.code !== 0 || !r.out.includes("Usage:")) return `exit ${r.code}: ${r.out.slice(0, 400)}`;
    return "";
  },
  pi(c, argv) {
    const args = withoutPrompt({ ...c, argv });
    const problem = checkFlags(args.slice(1), helpOptions(help([argv[0]]), "pi"));
    if (problem) return problem;
    const home = freshHome();
    if (c.resume_session_id) piSession(home, c.resume_session_id);
    const r = run([...args, "--help"], { home });
    if (r.code !== 0 || /Warning|Error|Unknown option|No session found|different project/i.test(r.out)) return `exit ${r.code}: ${r.out.slice(0, 400)}`;
    return "";
  },
};

let failed = 0, passed = 0;
for (const file of goldens) {
  const cli = path.basename(path.dirname(path.dirname(file)));
  for (const line of fs.readFileSync(file, "utf8").split("\n").filter(Boolean)) {
    const c = JSON.parse(line);
    // A shell prelude (codex's resume, pi's base_url, copilot's usage): sh -c <script> sh <args...> <cli argv...>
    if (c.argv[0] === "sh") c.argv = c.argv.slice(c.argv.findIndex((a, i) => i >= 4 && (a === cli || a.endsWith("/" + cli))));
    const argv = [path.join(bin, cli), ...c.argv.slice(1)];
    const problem = checks[cli](c, argv);
    if (problem) { failed++; console.log(`FAIL ${cli}: ${c.name}\n     ${JSON.stringify(c.argv)}\n     ${problem}`); }
    else { passed++; console.log(`ok   ${cli}: ${c.name}`); }
  }
}

// Negative controls: each must be rejected, or the method proves nothing.
const P = "do nothing";
const controls = [
  ["claude", "unknown flag", { mode: "print", stdin: P, argv: ["claude", "--print", "--verbose", "--output-format", "stream-json", "--bogus-flag"] }],
  ["claude", "stream-json without --verbose", { mode: "print", stdin: P, argv: ["claude", "--print", "--output-format", "stream-json"] }],
  ["claude", "bad effort", { mode: "print", stdin: P, argv: ["claude", "--print", "--verbose", "--output-format", "stream-json", "--effort", "huge"] }],
  ["claude", "resume of a missing session", { mode: "print", stdin: P, argv: ["claude", "--print", "--verbose", "--output-format", "stream-json", "--resume", "3f6c2a9e-0000-4000-8000-000000000000"] }],
  ["codex", "-a on exec", { argv: ["codex", "exec", "--json", "-a", "never"] }],
  ["codex", "-s on exec resume", { argv: ["codex", "exec", "resume", "x", "--json", "-s", "danger-full-access", "-"] }],
  ["opencode", "unknown flag", { argv: ["opencode", "run", "--format", "json", "--bogus"] }],
  ["opencode", "bad format", { argv: ["opencode", "run", "--format", "yaml"] }],
  ["copilot", "unknown flag", { argv: ["copilot", "--output-format", "json", "--bogus"] }],
  ["copilot", "bad effort", { argv: ["copilot", "--output-format", "json", "--reasoning-effort", "huge"] }],
  ["gemini", "unknown flag", { mode: "print", stdin: P, argv: ["gemini", "--output-format", "stream-json", "--bogus", "--prompt", ""] }],
  ["gemini", "bad output format", { mode: "print", stdin: P, argv: ["gemini", "--output-format", "yaml", "--prompt", ""] }],
  ["gemini", "resume of a missing session", { mode: "print", stdin: P, argv: ["gemini", "--output-format", "stream-json", "--resume", "ca2d12da-0000-4000-8000-000000000000", "--prompt", ""] }],
  ["pi", "unknown flag", { argv: ["pi", "--mode", "json", "--bogus"] }],
  ["pi", "bad thinking level", { argv: ["pi", "--mode", "json", "--thinking", "max"] }],
  ["pi", "missing session", { argv: ["pi", "--mode", "json", "--session", "019e8c52-0000-7000-8000-000000000000"] }],
];
if (isRoot) controls.push(["claude", "bypass as root without IS_SANDBOX", { mode: "print", stdin: P, env: { IS_SANDBOX: "" }, argv: ["claude", "--print", "--verbose", "--output-format", "stream-json", "--dangerously-skip-permissions"] }]);
for (const [cli, name, c] of controls) {
  const argv = [path.join(bin, cli), ...c.argv.slice(1)];
  if (checks[cli](c, argv)) { passed++; console.log(`ok   ${cli}: rejects ${name}`); }
  else { failed++; console.log(`FAIL ${cli}: accepted ${name} (the check cannot see rejections)`); }
}
fs.rmSync(work, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
EOF

log "replaying the golden commands against the real CLIs"
node "$checker" "$bin" plugins/claude/testdata/commands.golden plugins/codex/testdata/commands.golden \
  plugins/opencode/testdata/commands.golden plugins/pi/testdata/commands.golden \
  plugins/copilot/testdata/commands.golden plugins/gemini/testdata/commands.golden

log "session capture and resume with the real claude and pi"
SANDDUNE_AGENTS_BIN="$bin" go test -count=1 -run '^TestCompat' ./core/internal/session

log "all checks passed in $(( $(date +%s) - start ))s"
