// Drives the fake Vercel API (vercelfaked) with the official @vercel/sandbox
// SDK: if the SDK cannot use the fake, the fake is wrong. Run by
// scripts/vercel-compat.sh with FAKE_URL set; prints one line per check.
import { Sandbox } from "@vercel/sandbox";

const fake = process.env.FAKE_URL;
const creds = { token: "compat-token", teamId: "team_compat", projectId: "prj_compat" };
// The SDK talks to https://vercel.com/api; send that to the fake instead.
const fetchFake = (input, init) => {
  const url = typeof input === "string" || input instanceof URL ? String(input) : input.url;
  if (!url.startsWith("https://vercel.com/")) throw new Error(`unexpected URL ${url}`);
  return fetch(fake + url.slice("https://vercel.com".length), init);
};

function check(cond, what, got) {
  if (!cond) throw new Error(`${what}: got ${JSON.stringify(got)}`);
  console.log(`ok   ${what}`);
}

const sandbox = await Sandbox.create({ ...creds, fetch: fetchFake, timeout: 120_000, resources: { vcpus: 2 }, persistent: false, tags: { compat: "1" } });
check(typeof sandbox.name === "string" && sandbox.name.length > 0, "create: a named sandbox", sandbox.name);

await sandbox.writeFiles([
  { path: "hello.txt", content: Buffer.from("hello from the SDK\n") },
  { path: "/tmp/deep/dir/run.sh", content: Buffer.from("#!/bin/sh\necho ran\n") },
]);
await sandbox.mkDir("made");
check(true, "writeFiles (relative and absolute, new parents) and mkDir", null);

const done = await sandbox.runCommand("sh", ["-c", "cat hello.txt; test -d made && echo dir; sh /tmp/deep/dir/run.sh; echo oops >&2; exit 3"]);
const out = await done.stdout();
const err = await done.stderr();
check(done.exitCode === 3 && out === "hello from the SDK\ndir\nran\n" && err === "oops\n", "runCommand (wait + logs stream): exit code, stdout, stderr", { code: done.exitCode, out, err });

const env = await sandbox.runCommand({ cmd: "sh", args: ["-c", 'printf "%s %s" "$A" "$(pwd)"'], env: { A: "from-env" }, cwd: "/tmp" });
check((await env.stdout()) === "from-env /tmp", "runCommand with env and cwd", await env.stdout());

const detached = await sandbox.runCommand({ cmd: "sh", args: ["-c", "for i in 1 2 3; do echo line$i; sleep 0.2; done"], detached: true });
const lines = [];
for await (const log of detached.logs()) lines.push(`${log.stream}:${log.data}`);
const finished = await detached.wait();
check(finished.exitCode === 0 && lines.join("") === "stdout:line1\nstdout:line2\nstdout:line3\n", "detached command: logs() follows, wait() exit code", { code: finished.exitCode, lines });

const sleeper = await sandbox.runCommand({ cmd: "sleep", args: ["100"], detached: true });
await sleeper.kill("SIGTERM");
const killed = await sleeper.wait();
check(killed.exitCode === 143, "kill(SIGTERM): exit code 143", killed.exitCode);

const buf = await sandbox.readFileToBuffer({ path: "hello.txt" });
check(buf && buf.toString() === "hello from the SDK\n", "readFileToBuffer", buf && buf.toString());
const missing = await sandbox.readFileToBuffer({ path: "no-such-file" });
check(missing === null, "readFileToBuffer of a missing file: null", missing);

const again = await Sandbox.get({ ...creds, fetch: fetchFake, name: sandbox.name });
check(again.name === sandbox.name && again.status === "running", "Sandbox.get by name", { name: again.name, status: again.status });

const listed = await Sandbox.list({ ...creds, fetch: fetchFake });
const names = (listed.sandboxes ?? listed.json?.sandboxes ?? []).map((s) => s.name);
check(names.includes(sandbox.name), "Sandbox.list", names);

await sandbox.stop();
check(true, "stop", null);
await sandbox.delete();
let gone = false;
try {
  await Sandbox.get({ ...creds, fetch: fetchFake, name: sandbox.name });
} catch {
  gone = true;
}
check(gone, "delete: the sandbox is gone", gone);
console.log("vercel-compat: the official SDK drives the fake");
