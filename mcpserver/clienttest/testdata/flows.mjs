// Drives the built `airlock mcp` over stdio with the official TypeScript SDK client.
// Usage: node flows.mjs SDK_DIR AIRLOCK_BIN CONFIG WORKSPACE
// With AIRLOCK_MCP_URL (and AIRLOCK_MCP_TOKEN) set, it drives `airlock serve` at that URL over
// streamable HTTP instead.
// Prints "ok STEP" for each flow and exits non-zero at the first failure.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

const [sdkDir, bin, config, ws] = process.argv.slice(2);
const sdk = (p) => import(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ElicitRequestSchema } = await sdk("types.js");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const ok = (step) => console.log("ok " + step);
// What a machine reads of a result travels in _meta; structuredContent would replace the text
// that Claude Code and Codex show their model, so a result must never carry it.
const st = (res) => {
  assert.equal(res.structuredContent, undefined, "structuredContent: " + JSON.stringify(res.structuredContent));
  return res._meta["dev.airlock/result"];
};

async function waitFile(p, ms = 10000) {
  for (let t = 0; t < ms; t += 20) {
    if (fs.existsSync(p) && fs.readFileSync(p, "utf8").trim() !== "") return fs.readFileSync(p, "utf8").trim();
    await sleep(20);
  }
  throw new Error("no file " + p);
}

// A command records a PID with its PID namespace ("PID pid:[INODE]"): on the local backend
// commands run in the resident helper's PID namespace, so the PID alone names another
// process on the host. hostAlive finds the recorded process from the host's /proc.
const RECORD = (v) => `echo "$${v} $(readlink /proc/self/ns/pid)"`;

function hostAlive(rec) {
  const [nsPid, ns] = rec.trim().split(/\s+/);
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readlinkSync(`/proc/${d}/ns/pid`) !== ns) continue;
      const status = fs.readFileSync(`/proc/${d}/status`, "utf8");
      const ids = (status.match(/^NSpid:\s*(.*)$/m) || [, ""])[1].trim().split(/\s+/);
      const state = (status.match(/^State:\s*(\S)/m) || [, ""])[1];
      if (ids[ids.length - 1] === nsPid && state !== "Z") return Number(d);
    } catch {
      // the process ended while we looked
    }
  }
  return 0;
}

async function waitRecord(p) {
  for (let t = 0; t < 10000; t += 20) {
    try {
      const rec = fs.readFileSync(p, "utf8");
      if (rec.trim().split(/\s+/).length === 2 && hostAlive(rec)) return rec;
    } catch {
      // not written yet
    }
    await sleep(20);
  }
  throw new Error("no running process recorded in " + p);
}

async function assertGone(rec) {
  for (let t = 0; t < 10000; t += 20) {
    if (!hostAlive(rec)) return;
    await sleep(20);
  }
  throw new Error(`process ${rec.trim()} (host PID ${hostAlive(rec)}) still alive`);
}

// The person: approves calls whose command mentions "approve-me", denies the rest with a
// message for the model.
const asked = [];
const client = new Client({ name: "airlock-ts-test", version: "1" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  if (req.params.message.includes("approve-me")) return { action: "accept", content: { decision: "approve_once" } };
  return { action: "accept", content: { decision: "deny", message: "not now: run the unit tests instead" } };
});
const transport = process.env.AIRLOCK_MCP_URL
  ? new StreamableHTTPClientTransport(new URL(process.env.AIRLOCK_MCP_URL), {
      requestInit: { headers: { Authorization: "Bearer " + process.env.AIRLOCK_MCP_TOKEN } },
    })
  : new StdioClientTransport({ command: bin, args: ["mcp", "--config", config], cwd: ws, stderr: "inherit" });
await client.connect(transport);
const call = (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts);

// Tools with their annotations.
const { tools } = await client.listTools();
const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
for (const n of ["terminal", "read_file", "write_file", "patch", "search_files", "job_output", "job_wait", "job_list", "job_kill", "approval_wait"]) {
  assert.ok(byName[n], "tool listed: " + n);
}
assert.equal(byName.read_file.annotations.readOnlyHint, true);
assert.equal(byName.terminal.annotations.destructiveHint, true);
assert.equal(byName.write_file.annotations.readOnlyHint, false);
assert.ok(byName.terminal.inputSchema.properties.background);
ok("list_tools");

// Files.
let r = await call("write_file", { path: "notes.txt", content: "alpha\nbeta\n" });
assert.equal(st(r).status, "ok", text(r));
r = await call("read_file", { path: "notes.txt" });
assert.match(text(r), /beta/);
r = await call("patch", { path: "notes.txt", old_string: "beta", new_string: "gamma" });
assert.equal(st(r).status, "ok", text(r));
assert.match(text(r), /\+gamma/);
r = await call("search_files", { pattern: "gamma" });
assert.match(text(r), /notes\.txt/);
ok("files");

// A command, and a dangerous one refused as a tool result.
r = await call("terminal", { command: "cat notes.txt; exit 4" });
assert.equal(st(r).status, "ok");
assert.equal(st(r).exit_code, 4);
assert.match(text(r), /gamma/);
assert.match(st(r).receipt_sha256, /^[0-9a-f]{64}$/);
ok("terminal");
r = await call("terminal", { command: "rm -rf /" });
assert.equal(r.isError, true);
assert.equal(st(r).error_code, "hard_deny");
ok("dangerous_refused");

// Approval through elicitation: once approved, once denied with a message the model sees.
r = await call("terminal", { command: "node -e 'console.log(1)' >/dev/null; echo approve-me > approved.txt; echo ran" });
assert.equal(st(r).status, "ok", text(r));
assert.match(st(r).decided_by, /person:elicitation/);
assert.ok(fs.existsSync(path.join(ws, "approved.txt")));
assert.match(asked[0], /risk:/);
ok("elicitation_approved");
r = await call("terminal", { command: "node -e 'console.log(2)'; touch denied.txt" });
assert.equal(r.isError, true);
assert.equal(st(r).error_code, "denied_by_person");
assert.match(text(r), /run the unit tests instead/);
assert.ok(!fs.existsSync(path.join(ws, "denied.txt")));
ok("elicitation_denied");

// Progress notifications carry the output so far.
const progress = [];
r = await call("terminal", { command: "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.3; done" },
  { onprogress: (p) => progress.push(p.message ?? ""), resetTimeoutOnProgress: true, timeout: 30000 });
assert.match(text(r), /tick 6/);
assert.ok(progress.length >= 2, "progress notifications: " + progress.length);
assert.ok(progress.some((m) => m.includes("tick 1")), JSON.stringify(progress));
ok("progress");

// Cancelling a call kills its process tree.
fs.rmSync(path.join(ws, "bg.pid"), { force: true });
const ac = new AbortController();
const pending = call("terminal", { command: `sleep 300 & ${RECORD("!")} > bg.pid; sleep 300` }, { signal: ac.signal }).catch((e) => e);
const pid = await waitRecord(path.join(ws, "bg.pid"));
ac.abort();
await pending;
await assertGone(pid);
ok("cancel");

// Background jobs: start, read twice (nothing lost or repeated), wait; kill another.
r = await call("terminal", { background: true, command: "i=0; while [ $i -lt 50 ]; do echo line $i; i=$((i+1)); sleep 0.02; done" });
const job = st(r).data.job_id;
assert.ok(job, text(r));
await sleep(300);
const strip = (t) => t.split("\n").filter((l) => l !== "" && !l.startsWith("[job ")).map((l) => l + "\n").join("");
const first = await call("job_output", { job_id: job });
const waited = await call("job_wait", { job_id: job, timeout: 20 });
assert.equal(st(waited).data.state, "exited", text(waited));
let want = "";
for (let i = 0; i < 50; i++) want += `line ${i}\n`;
assert.equal(strip(text(first)) + strip(text(waited)), want);
ok("job_output_twice");
fs.rmSync(path.join(ws, "job.pid"), { force: true });
r = await call("terminal", { background: true, command: `${RECORD("$")} > job.pid; exec sleep 300` });
const other = st(r).data.job_id;
const jobPid = await waitRecord(path.join(ws, "job.pid"));
r = await call("job_list", {});
assert.match(text(r), new RegExp(other));
r = await call("job_kill", { job_id: other });
assert.equal(st(r).data.state, "killed", text(r));
await assertGone(jobPid);
ok("job_kill");

await client.close();
ok("done");
