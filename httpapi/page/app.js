// Airlock's approvals page. Everything that came from the agent is put on the page with
// textContent after shown()/shownText() escaped it; nothing is ever parsed as markup.
"use strict";

const KEY = "airlock-token";
const $ = (id) => document.getElementById(id);
const cards = new Map(); // approval id -> {li, rec}
let receiptStream = null;

// shown renders one line as Airlock's terminal does (pending.Escape): as it is when every
// character prints as itself, else quoted with escapes, so a control, format or bidi
// character can neither hide nor reorder what is shown.
function shown(s) {
  s = String(s ?? "");
  if (s.startsWith('"') || /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u00a0\u2000-\u200a\u3000]/u.test(s)) {
    return JSON.stringify(s).replace(/[\p{Cf}\p{Zl}\p{Zp}\u00a0\u2000-\u200a\u3000]/gu,
      (c) => "\\u" + c.codePointAt(0).toString(16).padStart(4, "0"));
  }
  return s;
}
const shownText = (s) => String(s ?? "").split("\n").map(shown).join("\n");

function token() { return sessionStorage.getItem(KEY); }

async function api(path, opts = {}) {
  const headers = Object.assign({ Authorization: "Bearer " + token() }, opts.headers || {});
  const resp = await fetch(path, Object.assign({}, opts, { headers, cache: "no-store", credentials: "omit" }));
  if (resp.status === 401) { logout("the token was refused"); throw new Error("unauthorized"); }
  return resp;
}

// follow reads a server-sent event stream through fetch (so the token travels as a
// header, never in a URL or a cookie) and reconnects after a pause when it ends.
function follow(path, onEvent, signal) {
  const run = async () => {
    while (!signal.aborted) {
      try {
        const resp = await api(path, { headers: { Accept: "text/event-stream" }, signal });
        if (!resp.ok) throw new Error("HTTP " + resp.status);
        setStatus("live");
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let name = "message", data = "";
            for (const line of block.split("\n")) {
              if (line.startsWith("event: ")) name = line.slice(7);
              else if (line.startsWith("data: ")) data += line.slice(6);
            }
            if (data) onEvent(name, JSON.parse(data));
          }
        }
      } catch (e) {
        if (signal.aborted || e.message === "unauthorized") return;
        setStatus("reconnecting…");
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  };
  run();
}

function setStatus(text) { $("status").textContent = text; }

function logout(why) {
  sessionStorage.removeItem(KEY);
  location.reload();
  if (why) console.warn(why);
}

// ---- approvals ----

function field(dl, name, value) {
  if (value === undefined || value === null || value === "") return;
  const dt = document.createElement("dt");
  dt.textContent = shown(name);
  const dd = document.createElement("dd");
  dd.textContent = shownText(value);
  dl.append(dt, dd);
}

function render(rec) {
  const li = $("approval-tpl").content.firstElementChild.cloneNode(true);
  li.id = "approval-" + rec.id;
  li.dataset.id = rec.id;
  li.querySelector(".tool").textContent = shown(rec.tool);
  li.querySelector(".risk").textContent = "risk: " + shown(rec.risk);
  li.querySelector(".summary").textContent = shown(rec.summary);
  const dl = li.querySelector(".fields");
  for (const f of rec.fields || []) field(dl, f.name, f.value);
  field(dl, "working directory", rec.workdir);
  field(dl, "session", rec.session_id);
  field(dl, "backend", rec.backend);
  field(dl, "call id", rec.call_id);
  field(dl, "approval", rec.id);
  if (rec.batch && rec.batch.length) field(dl, "rest of its batch", rec.batch.join(", "));
  const ul = li.querySelector(".reasons");
  for (const r of rec.reasons || []) {
    const item = document.createElement("li");
    item.textContent = shown(r);
    ul.append(item);
  }
  li.querySelector(".preview").textContent = shownText((rec.preview || "").replace(/\n$/, ""));
  li.querySelector(".covers").textContent = "Approve for the session also runs, without asking, for the rest of the session: " +
    shown(rec.session_covers || "this exact call again");
  li.querySelector(".approve-once").addEventListener("click", () => decide(rec.id, { decision: "approve", scope: "once" }));
  li.querySelector(".approve-session").addEventListener("click", () => decide(rec.id, { decision: "approve", scope: "session" }));
  const msg = li.querySelector(".message");
  const deny = () => decide(rec.id, { decision: "deny", message: msg.value });
  li.querySelector(".deny").addEventListener("click", deny);
  msg.addEventListener("keydown", (e) => { if (e.key === "Enter") deny(); });
  return li;
}

function onApproval(rec) {
  const have = cards.get(rec.id);
  if (rec.state !== "pending") {
    if (have) { have.li.remove(); cards.delete(rec.id); }
    updateCount();
    return;
  }
  const li = render(rec);
  if (have) have.li.replaceWith(li);
  else {
    $("approvals").append(li);
    notify(rec);
  }
  cards.set(rec.id, { li, rec });
  updateCount();
  tick();
}

function updateCount() {
  $("pending-count").textContent = "(" + cards.size + ")";
  $("none").hidden = cards.size > 0;
  document.title = (cards.size ? "(" + cards.size + ") " : "") + "Airlock approvals";
}

async function decide(id, body) {
  const card = cards.get(id);
  const err = card && card.li.querySelector(".error");
  card && card.li.querySelectorAll("button").forEach((b) => (b.disabled = true));
  try {
    if (body.decision === "deny" && !body.message) delete body.message;
    const resp = await api("/v1/approvals/" + encodeURIComponent(id), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    const data = await resp.json();
    if (!resp.ok) throw new Error(data.error ? data.error.code + ": " + data.error.message : "HTTP " + resp.status);
    onApproval(data);
  } catch (e) {
    if (err) err.textContent = shown(e.message);
    card && card.li.querySelectorAll("button").forEach((b) => (b.disabled = false));
  }
}

// tick shows each approval's time left, and closes it once it has expired.
function tick() {
  const now = Date.now();
  for (const { li, rec } of cards.values()) {
    const left = Math.max(0, Math.round((Date.parse(rec.expires_at) - now) / 1000));
    const el = li.querySelector(".expires");
    if (left === 0) {
      el.textContent = "expired: the call was denied";
      li.querySelectorAll("button").forEach((b) => (b.disabled = true));
      continue;
    }
    el.textContent = "expires in " + Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
  }
}

function notify(rec) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  new Notification("Airlock: approval needed", { body: shown(rec.tool) + ": " + shown(rec.summary), tag: rec.id });
}

// ---- receipts ----

function receiptRow(ln) {
  const r = ln.receipt || {};
  const tr = document.createElement("tr");
  const cells = [new Date(ln.time).toLocaleTimeString(), r.session_id, r.tool_name, r.decision, r.decided_by, r.outcome,
    r.exit_code === undefined || r.exit_code === null ? "" : String(r.exit_code)];
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = shown(c);
    tr.append(td);
  }
  tr.dataset.seq = ln.seq;
  return tr;
}

async function loadReceipts() {
  if (receiptStream) receiptStream.abort();
  receiptStream = new AbortController();
  const q = new URLSearchParams({ limit: "50", event: "completed" });
  const s = $("f-session").value.trim(), t = $("f-tool").value.trim();
  if (s) q.set("session", s);
  if (t) q.set("tool", t);
  const resp = await api("/v1/receipts?" + q);
  const page = await resp.json();
  const body = $("receipts");
  body.replaceChildren(...(page.receipts || []).map(receiptRow));
  const last = page.receipts && page.receipts.length ? page.receipts[0].seq : 0;
  q.delete("limit");
  q.set("follow", "1");
  q.set("after", String(last));
  follow("/v1/receipts?" + q, (name, ln) => {
    if (name !== "receipt") return;
    body.prepend(receiptRow(ln));
    while (body.children.length > 200) body.lastElementChild.remove();
  }, receiptStream.signal);
}

// ---- start ----

function start() {
  $("forget").hidden = false;
  $("forget").addEventListener("click", () => logout());
  if ("Notification" in window && Notification.permission === "default") {
    $("notify").hidden = false;
    $("notify").addEventListener("click", () => Notification.requestPermission().then(() => ($("notify").hidden = true)));
  }
  updateCount();
  follow("/v1/approvals?follow=1", (name, rec) => { if (name === "approval") onApproval(rec); }, new AbortController().signal);
  let debounce;
  for (const id of ["f-session", "f-tool"]) {
    $(id).addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(loadReceipts, 300); });
  }
  loadReceipts();
  setInterval(tick, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  if (token()) { start(); return; }
  const form = $("login");
  form.hidden = false;
  $("token").focus();
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const tok = $("token").value.trim();
    const resp = await fetch("/v1/approvals", { headers: { Authorization: "Bearer " + tok }, cache: "no-store", credentials: "omit" });
    if (resp.status === 401) { $("login-error").textContent = "That token is not accepted."; return; }
    sessionStorage.setItem(KEY, tok);
    form.hidden = true;
    start();
  });
});
