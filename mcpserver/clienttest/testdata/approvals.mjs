// A person approves exactly what runs, through the official TypeScript SDK client's
// elicitation: the built `airlock mcp` over stdio, the person played by the handler.
// Usage: node approvals.mjs SDK_DIR AIRLOCK_BIN CONFIG WORKSPACE
// Prints "ok STEP" for each step and exits non-zero at the first failure. Results are read
// from their text and from the files they change, not from structured content.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";

const [sdkDir, bin, config, ws] = process.argv.slice(2);
const sdk = (p) => import(path.join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { ElicitRequestSchema } = await sdk("types.js");
const ok = (step) => console.log("ok " + step);
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

// The person answers from a queue; every question is kept.
const asked = [];
const answers = [];
const client = new Client({ name: "airlock-ts-approvals", version: "1" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: "accept", content: answers.shift() ?? { decision: "deny", message: "no" } };
});
await client.connect(new StdioClientTransport({ command: bin, args: ["mcp", "--config", config], cwd: ws, stderr: "inherit" }));
const call = (name, args) => client.callTool({ name, arguments: args });
const once = { decision: "approve_once" };
const session = { decision: "approve_session" };

// A fetch shows its method and full URL; "for the session" covers that URL only. The
// timeout of a nanosecond ends an approved fetch before it dials: nothing leaves the host.
const url = "http://10.255.255.1:9/reports/q3.csv?token=abc&x=1";
answers.push(session);
let r = await call("web_fetch", { url, method: "HEAD", timeout: 1e-9 });
assert.match(text(r), /fetch_timeout/, text(r));
assert.equal(asked.length, 1);
assert.ok(asked[0].includes(url) && asked[0].includes("HEAD"), asked[0]);
ok("fetch_url_shown");
r = await call("web_fetch", { url, method: "HEAD", timeout: 1e-9 });
assert.equal(asked.length, 1, "the approved fetch again is not asked");
r = await call("web_fetch", { url: "http://10.255.255.1:9/admin?all=1", method: "HEAD", timeout: 1e-9 });
assert.equal(asked.length, 2, "another URL is asked about");
assert.match(text(r), /denied_by_person/, text(r));
ok("fetch_session_covers_one_url");

// The URL guard decides before a person is asked.
r = await call("web_fetch", { url: "http://127.0.0.1:1/" });
assert.equal(r.isError, true);
assert.match(text(r), /network_denied/, text(r));
assert.equal(asked.length, 2, "no question about a fetch the guard refuses");
ok("guard_before_person");

// A write approved for the session covers that content only.
answers.push(session);
r = await call("write_file", { path: "conf.txt", content: "debug = false\n" });
assert.equal(fs.readFileSync(path.join(ws, "conf.txt"), "utf8"), "debug = false\n");
r = await call("write_file", { path: "conf.txt", content: "debug = true\n" });
assert.equal(asked.length, 4, "other content is asked about");
assert.ok(asked[3].includes("+debug = true"), asked[3]);
assert.equal(fs.readFileSync(path.join(ws, "conf.txt"), "utf8"), "debug = false\n");
ok("write_session_covers_one_content");

// A 1 MiB file's replacement is shown as a replacement.
let big = "";
for (let i = 1; big.length < 1 << 20; i++) big += `line ${String(i).padStart(6, "0")} of a one-mebibyte file, padded to sixty-four bytes.\n`;
fs.writeFileSync(path.join(ws, "big.txt"), big);
const oldLine = "line 008000 of a one-mebibyte file, padded to sixty-four bytes.";
answers.push(once);
r = await call("write_file", { path: "big.txt", content: big.replace(oldLine, "line 008000 changed") });
assert.ok(asked[4].includes("-" + oldLine) && asked[4].includes("+line 008000 changed"), asked[4].slice(0, 2000));
assert.ok(!asked[4].includes("+line 000001 "), "unchanged lines shown as added");
ok("large_file_diff");

// replace_all is shown whole.
fs.writeFileSync(path.join(ws, "app.cfg"), "mode = safe\na\nb\nc\nd\ne\nf\ng\nh\ni\nmode = safe\n");
answers.push(once);
r = await call("patch", { path: "app.cfg", old_string: "mode = safe", new_string: "mode = unsafe", replace_all: true });
assert.equal((asked[5].match(/\n-mode = safe/g) || []).length, 2, asked[5]);
assert.equal((asked[5].match(/\n\+mode = unsafe/g) || []).length, 2, asked[5]);
ok("replace_all_whole");

// Escape sequences from the agent reach the person escaped.
r = await call("terminal", { command: "node -e 1 # \x1b[2K\x1b[1Aapproved\x07 \u202eevil" });
assert.ok(!/[\x1b\x07\u202e]/.test(asked[6]), JSON.stringify(asked[6]));
assert.ok(asked[6].includes("\\x1b[2K") && asked[6].includes("\\u202e"), asked[6]);
ok("escaped");

await client.close();
ok("done");
