// harness serve viewer: applies live events to the server-rendered page.
// Mirrors harness_core/serve/conversation.py. Only textContent is ever set (no HTML from events).
"use strict";

const TOKEN_KEY = "harness-serve-token";
const TYPES = ["turn.started", "message.delta", "message.completed", "tool.started",
  "tool.completed", "permission.requested", "permission.resolved", "status", "artifact",
  "usage", "turn.completed", "turn.failed", "turn.cancelled", "session.closed",
  "session.opened", "session.resumed"];

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

async function post(path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY) || "";
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Authorization": "Bearer " + token },
    body: JSON.stringify(body || {}),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data.error || {};
    throw new Error((error.reason || response.status) + ": " + (error.message || "")
      + (error.hint ? " (" + error.hint + ")" : ""));
  }
  return data;
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
    if (!body.dataset.closed) this.follow(Number(body.dataset.lastSequence || 0));
  }

  follow(after) {
    const url = "/api/sessions/" + encodeURIComponent(this.session)
      + "/events?follow=1&after=" + after;
    const source = new EventSource(url);
    for (const type of TYPES) {
      source.addEventListener(type, (message) => this.apply(JSON.parse(message.data)));
    }
    source.addEventListener("end", () => source.close());
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
    const items = turn.querySelector(".items");
    switch (event.type) {
      case "message.delta":
        turn.dataset.streamed = "1";
        this.appendText(items, p.text);
        break;
      case "message.completed":
        if (p.role === "assistant" && !turn.dataset.streamed && p.text) this.appendText(items, p.text);
        break;
      case "tool.started":
      case "tool.completed": {
        let node = items.querySelector('.tool[data-call="' + CSS.escape(p.call_id) + '"]');
        if (!node) {
          node = el("div", "tool");
          node.dataset.call = p.call_id;
          node.append(el("span", "icon"), el("code", null, p.name), " ", el("span", "summary", ""));
          items.append(node);
        }
        node.className = "tool " + (event.type === "tool.started" ? "running" : (p.ok ? "ok" : "error"));
        if (p.summary) node.querySelector(".summary").textContent = p.summary;
        break;
      }
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
        turn.querySelector(".usage").textContent = fmtUsage(total);
        for (const key of ["input_tokens", "output_tokens", "cost_usd"]) {
          if (p.usage[key] !== null && p.usage[key] !== undefined) {
            this.totals[key] = (this.totals[key] || 0) + p.usage[key];
          }
        }
        this.showTotals();
        break;
      }
      case "turn.completed":
        if (p.text && !items.querySelector(".text")) this.appendText(items, p.text);
        this.finishTurn(turn, "completed");
        break;
      case "turn.failed": {
        const node = el("div", "failure", "failed: ");
        node.append(el("code", null, p.reason), " " + p.message + (p.hint ? " (" + p.hint + ")" : ""));
        turn.querySelector(".outcome").replaceChildren(node);
        this.finishTurn(turn, "failed");
        break;
      }
      case "turn.cancelled":
        turn.querySelector(".outcome").replaceChildren(el("div", "failure cancelled", "cancelled by " + p.by));
        this.finishTurn(turn, "cancelled");
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
    const number = this.turns.querySelectorAll(".turn").length + 1;
    const turn = el("article", "turn");
    turn.id = "turn-" + event.turn_id;
    turn.dataset.turn = event.turn_id;
    turn.dataset.status = "running";
    const meta = el("div", "meta");
    meta.append(el("span", "badge running", "running"), " turn " + number + " · ",
      el("time", null, event.timestamp));
    const prompt = el("div", "prompt");
    prompt.append(el("span", "who", "prompt"), el("div", "text", event.payload.prompt));
    const answer = el("div", "answer");
    answer.append(el("span", "who", this.harness), el("div", "items"));
    turn.append(meta, prompt, answer, el("div", "outcome"), el("div", "usage"));
    this.turns.append(turn);
    this.totals.turns += 1;
    this.showTotals();
    this.running = event.turn_id;
    this.setStatus("running");
    this.showCancel();
  }

  finishTurn(turn, status) {
    turn.dataset.status = status;
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
  }

  async cancel() {
    if (!this.running) return;
    try {
      await post("/api/sessions/" + encodeURIComponent(this.session) + "/cancel", { turn_id: this.running });
      notice("cancel requested");
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

document.addEventListener("DOMContentLoaded", () => {
  takeToken();
  if (document.body.dataset.page === "session") window.harnessLive = new Live(document.body);
  if (document.body.dataset.page === "index") setTimeout(() => location.reload(), 5000);
});
