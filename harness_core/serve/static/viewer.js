// harness serve viewer: applies live events to the server-rendered page.
// Mirrors harness_core/serve/conversation.py. Only textContent is ever set (no HTML from events).
"use strict";

const TOKEN_KEY = "harness-serve-token";
const TYPES = ["turn.started", "turn.restarted", "message.delta", "message.completed", "tool.started",
  "tool.completed", "permission.requested", "permission.resolved", "status", "artifact",
  "usage", "turn.completed", "turn.failed", "turn.cancelled", "session.closed",
  "session.opened", "session.resumed", "thinking.delta", "thinking.completed", "model.completed",
  "output.validated"];

function takeToken() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  const state = document.getElementById("token-state");
  if (state) {
    state.textContent = sessionStorage.getItem(TOKEN_KEY)
      ? "token set: actions enabled"
      : "read-only: open the URL harness serve printed to act";
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// A call with the page's token; an API error becomes an Error saying its reason and hint.
async function call(path, init) {
  const token = sessionStorage.getItem(TOKEN_KEY) || "";
  const headers = Object.assign({ "Authorization": "Bearer " + token }, init.headers || {});
  const response = await fetch(path, Object.assign({}, init, { headers }));
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error || {};
    throw new Error((error.reason || response.status) + ": " + (error.message || "")
      + (error.hint ? " (" + error.hint + ")" : ""));
  }
  return data;
}

function post(path, body) {
  return call(path, { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}) });
}

function get(path) {
  return call(path, {});
}


// A unified diff as lines, each classed by its first character (textContent only).
function renderPatch(text) {
  const pre = el("pre", "patch");
  for (const line of text.replace(/\n$/, "").split("\n")) {
    let kind = "";
    if (line.startsWith("diff --git") || line.startsWith("index ")) kind = "file";
    else if (line.startsWith("+++") || line.startsWith("---")) kind = "file";
    else if (line.startsWith("@@")) kind = "hunk";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    pre.append(el("span", kind ? "line " + kind : "line", line + "\n"));
  }
  return pre;
}

function notice(text) {
  const node = document.getElementById("notice");
  if (node) node.textContent = text;
}

function camel(name) {
  return name.replace(/_(\w)/g, (_, c) => c.toUpperCase());
}

function fmtTokens(usage) {
  const i = usage.input_tokens, o = usage.output_tokens;
  if (i === undefined && o === undefined) return "";
  return "tokens " + (i === undefined ? "?" : i) + " / " + (o === undefined ? "?" : o) + " (in / out)";
}

function fmtUsage(usage) {
  const parts = [];
  const t = fmtTokens(usage);
  if (t) parts.push(t);
  if (usage.cost_usd !== undefined) parts.push("$" + usage.cost_usd.toFixed(4));
  return parts.join(" · ");
}

// -- time: relative timestamps that move, durations as the server writes them -------------------

function micros(text) {
  // whole microseconds since the epoch, exactly (the ledger writes microseconds; Date.parse
  // keeps milliseconds at best), so a duration here is the one the server renders
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,6})\d*)?(Z|[+-]\d\d:\d\d)$/.exec(String(text || ""));
  if (!m) return NaN;
  return Date.parse(m[1] + m[3]) * 1000 + (m[2] ? Number(m[2].padEnd(6, "0")) : 0);
}

function parseTime(text) {
  return micros(text) / 1000;
}

function ago(ms) {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size) return Math.floor(seconds / size) + unit + " ago";
  }
  return seconds + "s ago";
}

function duration(seconds) {
  // mirrors harness_core/serve/timing.py duration_text
  if (seconds === null || seconds === undefined || isNaN(seconds)) return "-";
  seconds = Math.max(0, seconds);
  if (seconds < 10) return seconds.toFixed(2) + " s";
  if (seconds < 60) return seconds.toFixed(1) + " s";
  const minutes = Math.floor(seconds / 60), rest = Math.floor(seconds % 60);
  return minutes + " m " + String(rest).padStart(2, "0") + " s";
}

function between(start, end) {
  const a = micros(start), b = micros(end);
  return isNaN(a) || isNaN(b) ? null : (b - a) / 1e6;
}

function relativeTime(timestamp) {
  const node = el("time", "rel", "");
  node.dateTime = timestamp;
  tickTime(node, Date.now());
  return node;
}

function tickTime(node, now) {
  const at = parseTime(node.dateTime);
  if (isNaN(at)) return;
  node.textContent = ago(now - at);
  node.title = new Date(at).toLocaleString();
}

function tickTimes() {
  const now = Date.now();
  document.querySelectorAll("time.rel").forEach((node) => tickTime(node, now));
  document.querySelectorAll("article.turn[data-status='running']").forEach((turn) => {
    const started = parseTime(turn.dataset.started);
    if (!isNaN(started)) {
      turn.querySelector(".timing").textContent = "running " + duration((now - started) / 1000);
    }
  });
}

// -- tool calls: one line (ran -> result, took), expandable; mirrors viewer.py render_tool ------

function toolNode(callId, name) {
  const node = el("details", "tool running");
  node.dataset.call = callId;
  const line = el("summary");
  line.append(el("span", "icon"), el("code", "name", name), " ", el("span", "input", ""),
    el("span", "arrow"), el("span", "summary output", ""), " ", el("span", "took", ""));
  const detail = el("dl", "detail");
  detail.append(el("dt", null, "ran"), el("dd", "detail-input", "-"),
    el("dt", null, "result"), el("dd", "detail-output", "-"),
    el("dt", null, "call"), el("dd", "detail-facts", ""));
  node.append(line, detail);
  return node;
}

// Thinking: one collapsed block a block of reasoning, under the answer it led to.
function applyThinking(items, event) {
  const p = event.payload;
  const last = items.lastElementChild;
  let node = last && last.classList.contains("thinking") && !last.dataset.done ? last : null;
  if (!node) {
    node = el("details", "thinking");
    node.append(el("summary", null, "thinking"), el("div", "thought", ""));
    items.append(node);
  }
  const thought = node.querySelector(".thought");
  if (event.type === "thinking.delta") {
    thought.textContent += p.text;
    return;
  }
  thought.textContent = p.text !== null ? p.text : "(" + p.characters + " characters, not kept)";
  node.dataset.done = "1";
}

function stepText(p) {
  const parts = [];
  if (p.model) parts.push(p.model);
  if (p.usage) {
    const usage = {};
    for (const key of ["input_tokens", "output_tokens", "cost_usd"]) {
      if (p.usage[key] !== null && p.usage[key] !== undefined) usage[key] = p.usage[key];
    }
    const text = fmtUsage(usage);
    if (text) parts.push(text);
  }
  if (p.duration_ms !== null && p.duration_ms !== undefined) parts.push(p.duration_ms + " ms");
  return parts.join(" ") || "model call";
}

function applyTool(items, event) {
  const p = event.payload;
  let node = items.querySelector(':scope > .tool[data-call="' + CSS.escape(p.call_id) + '"]');
  if (!node) {
    node = toolNode(p.call_id, p.name);
    node.dataset.first = event.sequence;
    node.dataset.startedAt = event.timestamp;
    items.append(node);
  }
  const facts = node.querySelector(".detail-facts");
  facts.replaceChildren("call ", el("code", null, p.call_id), " · events #" + node.dataset.first
    + (String(event.sequence) !== node.dataset.first ? "–#" + event.sequence : ""));
  if (event.type === "tool.started") {
    node.className = "tool running";
    node.querySelector(".input").textContent = p.summary || "";
    node.querySelector(".detail-input").textContent = p.summary || "-";
    return;
  }
  node.className = "tool " + (p.ok ? "ok" : "error");
  node.querySelector(".output").textContent = p.summary || "";
  node.querySelector(".detail-output").textContent = p.summary || "-";
  if (node.dataset.startedAt) {
    node.querySelector(".took").textContent = duration(between(node.dataset.startedAt, event.timestamp));
  }
}

// -- raw events: a turn's events as stored, fetched when asked for -------------------------------

async function toggleRaw(session, button) {
  const turn = button.closest("article.turn");
  const pre = turn.querySelector(":scope > pre.raw");
  const open = button.getAttribute("aria-expanded") === "true";
  button.setAttribute("aria-expanded", String(!open));
  pre.hidden = open;
  if (open) return;
  pre.textContent = "loading…";
  try {
    const url = "/api/sessions/" + encodeURIComponent(session) + "/events?turn="
      + encodeURIComponent(turn.dataset.turn);
    const response = await fetch(url);
    const data = await response.json();
    if (!response.ok) throw new Error((data.error || {}).message || response.status);
    pre.textContent = data.events.map((e) => JSON.stringify(e, null, 2)).join("\n");
  } catch (error) {
    pre.textContent = "could not read the events: " + error.message;
  }
}

class Live {
  constructor(body) {
    this.session = body.dataset.session;
    this.harness = body.dataset.harness;
    this.turns = document.getElementById("turns");
    this.cancelButton = document.getElementById("cancel");
    this.usage = new Map();
    this.totals = { turns: Number(body.dataset.turns || 0) };
    for (const key of ["input_tokens", "output_tokens", "cost_usd"]) {
      if (body.dataset[camel(key)]) this.totals[key] = Number(body.dataset[camel(key)]);
    }
    this.running = body.dataset.runningTurn || null;
    this.showCancel();
    this.cancelButton.addEventListener("click", () => this.cancel());
    const composer = document.getElementById("composer");
    if (composer) composer.addEventListener("submit", (e) => this.submit(e, composer));
    this.turns.addEventListener("click", (e) => this.decide(e));
    this.wireBranching();
    this.turns.addEventListener("click", (e) => {
      const button = e.target.closest(".raw-toggle");
      if (button) toggleRaw(this.session, button);
    });
    if (!body.dataset.closed) this.follow(Number(body.dataset.lastSequence || 0));
  }

  follow(after) {
    const url = "/api/sessions/" + encodeURIComponent(this.session)
      + "/events?follow=1&after=" + after;
    const source = new EventSource(url);
    for (const type of TYPES) {
      source.addEventListener(type, (message) => this.apply(JSON.parse(message.data)));
    }
    // "server-closing": the server is stopping; the browser reconnects (Last-Event-ID) when
    // it is back. Any other end (the session closed) is final.
    source.addEventListener("end", (message) => {
      if (JSON.parse(message.data).reason !== "server-closing") source.close();
    });
  }

  turnNode(turnId) {
    return document.getElementById("turn-" + turnId);
  }

  apply(event) {
    const p = event.payload;
    if (event.type === "session.closed") {
      this.setStatus("closed");
      const composer = document.getElementById("composer");
      if (composer) composer.remove();
      return;
    }
    if (event.type === "turn.started") return this.startTurn(event);
    const turn = event.turn_id && this.turnNode(event.turn_id);
    if (!turn) return;
    // ":scope >": a child session rendered inside a tool call has turns of its own
    const items = turn.querySelector(":scope > .answer > .items");
    switch (event.type) {
      case "turn.restarted":
        // A retried attempt (another worker): what the earlier one streamed is void, as
        // harness_core/transcript.py keeps only the last attempt's text and tools.
        items.replaceChildren(el("div", "status restarted", "attempt " + p.attempt
          + ": the turn restarted; what the previous attempt streamed is void"));
        delete turn.dataset.streamed;
        delete turn.dataset.firstOutput;
        turn.dataset.attempt = String(p.attempt);
        break;
      case "message.delta":
        turn.dataset.streamed = "1";
        this.firstOutput(turn, event);
        this.appendText(items, p.text);
        break;
      case "message.completed":
        if (p.text) this.firstOutput(turn, event);
        if (p.role === "assistant" && !turn.dataset.streamed && p.text) this.appendText(items, p.text);
        break;
      case "tool.started":
      case "tool.completed":
        applyTool(items, event);
        break;
      case "permission.requested": {
        const node = el("div", "permission");
        node.dataset.request = p.request_id;
        node.append(el("span", "label", "approval"), " ", el("code", null, p.tool || ""), " ",
          el("span", "summary", p.summary), " ", el("span", "decision", "pending"),
          el("button", "allow", "Allow"), el("button", "deny", "Deny"));
        items.append(node);
        break;
      }
      case "permission.resolved": {
        const node = items.querySelector('.permission[data-request="' + CSS.escape(p.request_id) + '"]');
        if (node) {
          node.querySelector(".decision").textContent = p.decision + " (" + p.source + ")";
          node.querySelectorAll("button").forEach((b) => b.remove());
        }
        break;
      }
      case "status":
        items.append(el("div", "status", p.message));
        break;
      case "thinking.delta":
      case "thinking.completed":
        applyThinking(items, event);
        break;
      case "model.completed": {
        const node = el("div", "status step");
        node.append(el("span", "label", "model step"), " " + stepText(p));
        items.append(node);
        break;
      }
      case "output.validated": {
        const node = el("div", "status validation");
        node.append(el("span", "label", "answer " + p.verdict),
          " attempt " + p.attempt + " " + p.verdict + (p.reason ? ": " + p.reason : ""));
        items.append(node);
        break;
      }
      case "artifact": {
        const node = el("div", "status", "artifact ");
        node.append(el("code", null, p.name), " " + (p.path || ""));
        items.append(node);
        break;
      }
      case "usage": {
        const total = this.usage.get(event.turn_id) || {};
        for (const key of ["input_tokens", "output_tokens", "cost_usd"]) {
          if (p.usage[key] !== null && p.usage[key] !== undefined) total[key] = (total[key] || 0) + p.usage[key];
        }
        this.usage.set(event.turn_id, total);
        turn.querySelector(":scope > .usage").textContent = fmtUsage(total);
        for (const key of ["input_tokens", "output_tokens", "cost_usd"]) {
          if (p.usage[key] !== null && p.usage[key] !== undefined) {
            this.totals[key] = (this.totals[key] || 0) + p.usage[key];
          }
        }
        this.showTotals();
        break;
      }
      case "turn.completed":
        if (p.text && !items.querySelector(":scope > .text")) this.appendText(items, p.text);
        this.finishTurn(turn, "completed", event);
        break;
      case "turn.failed": {
        const node = el("div", "failure", "failed: ");
        node.append(el("code", null, p.reason), " " + p.message + (p.hint ? " (" + p.hint + ")" : ""));
        turn.querySelector(":scope > .outcome").replaceChildren(node);
        this.finishTurn(turn, "failed", event);
        break;
      }
      case "turn.cancelled":
        turn.querySelector(":scope > .outcome").replaceChildren(el("div", "failure cancelled", "cancelled by " + p.by));
        this.finishTurn(turn, "cancelled", event);
        break;
    }
  }

  appendText(items, text) {
    let last = items.lastElementChild;
    if (!last || !last.classList.contains("text")) {
      last = el("div", "text", "");
      items.append(last);
    }
    last.textContent += text;
  }

  startTurn(event) {
    if (this.turnNode(event.turn_id)) return;
    // data-first: the number of the first turn rendered (earlier ones come on demand)
    const number = Number(this.turns.dataset.first || 1) + this.turns.querySelectorAll(":scope > .turn").length;
    const turn = el("article", "turn");
    turn.id = "turn-" + event.turn_id;
    turn.dataset.turn = event.turn_id;
    turn.dataset.status = "running";
    turn.dataset.started = event.timestamp;
    const meta = el("div", "meta");
    const raw = el("button", "raw-toggle", "raw events");
    raw.type = "button";
    raw.setAttribute("aria-expanded", "false");
    meta.append(el("span", "badge running", "running"), " turn " + number + " · ",
      relativeTime(event.timestamp), " · ", el("span", "timing", "running"), raw);
    const pre = el("pre", "raw");
    pre.hidden = true;
    const prompt = el("div", "prompt");
    prompt.append(el("span", "who", "prompt"), el("div", "text", event.payload.prompt));
    const answer = el("div", "answer");
    answer.append(el("span", "who", this.harness), el("div", "items"));
    turn.append(meta, prompt, answer, el("div", "outcome"), el("div", "usage"), pre);
    this.turns.append(turn);
    this.totals.turns += 1;
    this.showTotals();
    this.running = event.turn_id;
    this.setStatus("running");
    this.showCancel();
    tickTimes();
  }

  firstOutput(turn, event) {
    if (!turn.dataset.firstOutput) turn.dataset.firstOutput = event.timestamp;
  }

  finishTurn(turn, status, event) {
    turn.dataset.status = status;
    const parts = ["took " + duration(between(turn.dataset.started, event.timestamp))];
    if (turn.dataset.firstOutput) {
      parts.push("first token " + duration(between(turn.dataset.started, turn.dataset.firstOutput)));
    }
    turn.querySelector(".timing").textContent = parts.join(" · ");
    if (document.getElementById("notice").textContent === "cancel requested") notice("");
    const badge = turn.querySelector(".meta .badge");
    badge.className = "badge " + status;
    badge.textContent = status;
    if (this.running === turn.dataset.turn) this.running = null;
    this.setStatus("idle");
    this.showCancel();
  }

  showTotals() {
    const t = this.totals;
    document.getElementById("session-turns").textContent = t.turns + (t.turns === 1 ? " turn" : " turns");
    if (t.input_tokens !== undefined || t.output_tokens !== undefined) {
      document.getElementById("session-tokens").textContent =
        (t.input_tokens === undefined ? "?" : t.input_tokens) + " / " + (t.output_tokens === undefined ? "?" : t.output_tokens);
    }
    if (t.cost_usd !== undefined) document.getElementById("session-cost").textContent = "$" + t.cost_usd.toFixed(4);
  }

  setStatus(status) {
    const node = document.getElementById("session-status");
    if (!node || node.textContent === "closed") return;
    node.className = "badge " + status;
    node.textContent = status;
  }

  showCancel() {
    this.cancelButton.hidden = !this.running;
    const steer = document.getElementById("steer");
    if (steer) steer.hidden = !this.running;
  }

  // -- steer the running turn; fork from / rewind to a turn (branch_view.py renders them) --

  wireBranching() {
    const steer = document.getElementById("steer");
    if (steer) steer.addEventListener("submit", (e) => this.steer(e, steer));
    this.turns.addEventListener("click", (e) => this.branch(e));
    // "toggle" does not bubble: listen in the capture phase for every turn's files
    this.turns.addEventListener("toggle", (e) => this.showPatch(e.target), true);
  }

  async showPatch(details) {
    if (!details.matches || !details.matches("details.changes[data-turn]")) return;
    if (!details.open || details.dataset.patch) return;
    details.dataset.patch = "loading";
    const box = el("div", "patch-box muted", "loading the diff...");
    details.append(box);
    const path = "/api/sessions/" + encodeURIComponent(this.session) + "/turns/"
      + encodeURIComponent(details.dataset.turn) + "/diff";
    try {
      const diff = await get(path);
      box.replaceChildren(renderPatch(diff.patch || ""));
      box.className = "patch-box";
      if (diff.truncated) box.append(el("div", "muted", "the patch is cut here (too long to show)"));
      details.dataset.patch = "shown";
    } catch (error) {
      box.textContent = "no diff: " + error.message;
      delete details.dataset.patch;  // try again on the next opening
    }
  }

  async steer(e, form) {
    e.preventDefault();
    const text = form.elements.text.value;
    if (!text.trim() || !this.running) return;
    try {
      await post("/api/sessions/" + encodeURIComponent(this.session) + "/steer", { text });
      form.elements.text.value = "";
      notice("steered");
    } catch (error) {
      notice(error.message);
    }
  }

  async branch(e) {
    const fork = e.target.closest(".fork-here");
    const rewind = e.target.closest(".rewind-here");
    if (!fork && !rewind) return;
    const base = "/api/sessions/" + encodeURIComponent(this.session);
    try {
      if (fork) {
        const child = await post(base + "/fork", { at: fork.dataset.at });
        location.assign("/sessions/" + encodeURIComponent(child.ref.session_id));
      } else {
        const done = await post(base + "/rewind", { checkpoint: rewind.dataset.checkpoint });
        notice("rewound to " + done.checkpoint_id.slice(0, 13)
          + (done.conversation ? " (files and conversation)" : " (files)"));
      }
    } catch (error) {
      notice(error.message);
    }
  }

  async cancel() {
    if (!this.running) return;
    const turnId = this.running;
    try {
      await post("/api/sessions/" + encodeURIComponent(this.session) + "/cancel", { turn_id: turnId });
      // the turn's end may have arrived before this answer: say nothing then
      if (this.running === turnId) notice("cancel requested");
    } catch (error) {
      notice(error.message);
    }
  }

  async submit(e, form) {
    e.preventDefault();
    const prompt = form.elements.prompt.value;
    if (!prompt.trim()) return;
    try {
      await post("/api/sessions/" + encodeURIComponent(this.session) + "/turns", { prompt, stream: false });
      form.elements.prompt.value = "";
      notice("");
    } catch (error) {
      notice(error.message);
    }
  }

  async decide(e) {
    const button = e.target.closest(".permission button");
    if (!button) return;
    const request = button.closest(".permission").dataset.request;
    const decision = button.classList.contains("allow") ? "allow" : "deny";
    try {
      await post("/api/sessions/" + encodeURIComponent(this.session) + "/approve", { request_id: request, decision });
    } catch (error) {
      notice(error.message);
    }
  }
}

// -- the sessions page: fresh every few seconds, unless the person is busy with the search form --

function watchIndex() {
  const form = document.getElementById("search");
  let touched = false;
  if (form) {
    form.addEventListener("input", () => { touched = true; });
    form.querySelectorAll("select").forEach((select) => {
      select.addEventListener("change", () => form.requestSubmit());
    });
  }
  setInterval(() => {
    const busy = touched || (form && form.contains(document.activeElement));
    if (!busy && document.visibilityState === "visible") location.reload();
  }, 5000);
}

document.addEventListener("DOMContentLoaded", () => {
  takeToken();
  tickTimes();
  setInterval(tickTimes, 1000);
  if (document.body.dataset.page === "session") window.harnessLive = new Live(document.body);
  if (document.body.dataset.page === "index") watchIndex();
});
