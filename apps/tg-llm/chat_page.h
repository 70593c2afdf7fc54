#pragma once
// GET / of tg-llm serve: one page, no dependencies. It keeps the conversation, posts it to /v1/chat/completions with
// "stream": true and reads the server-sent events off fetch's body as they come. body[data-busy] is "1" while a reply
// streams (tests/llm/chat_page.py waits on it).
inline constexpr const char* CHAT_PAGE = R"html(<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>tg-llm</title>
<style>
  body { font: 15px/1.45 ui-monospace, Menlo, monospace; margin: 0; background: #111; color: #ddd; display: flex; flex-direction: column; height: 100vh; }
  header { padding: 8px 16px; border-bottom: 1px solid #333; display: flex; gap: 16px; align-items: center; }
  header b { color: #fff; } header label { color: #999; } header input { width: 5em; background: #222; color: #ddd; border: 1px solid #444; }
  #log { flex: 1; overflow-y: auto; padding: 16px; }
  .msg { white-space: pre-wrap; margin: 0 0 12px; padding: 8px 12px; border-radius: 6px; max-width: 80ch; }
  .user { background: #1d2b3a; margin-left: auto; } .assistant { background: #222; } .error { color: #f66; }
  form { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid #333; }
  #input { flex: 1; background: #1a1a1a; color: #eee; border: 1px solid #444; padding: 8px; font: inherit; resize: none; }
  button { background: #2a4; color: #fff; border: 0; padding: 0 18px; font: inherit; cursor: pointer; } button:disabled { background: #444; }
</style></head>
<body data-busy="0">
<header><b>tg-llm</b><span id="model"></span>
  <label>temperature <input id="temp" type="number" step="0.1" min="0" value="0.8"></label>
  <label>max tokens <input id="max" type="number" min="1" value="256"></label>
  <button id="clear" type="button">new chat</button></header>
<div id="log"></div>
<form id="form"><textarea id="input" rows="2" placeholder="message (Enter sends, Shift+Enter is a new line)"></textarea><button id="send">send</button></form>
<script>
const $ = (id) => document.getElementById(id);
let messages = [];
fetch("/v1/models").then((r) => r.json()).then((j) => { $("model").textContent = j.data[0].id; });

function add(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  div.textContent = text;
  $("log").appendChild(div);
  return div;
}

async function send(text) {
  messages.push({ role: "user", content: text });
  add("user", text);
  const out = add("assistant", "");
  document.body.dataset.busy = "1"; $("send").disabled = true;
  try {
    const res = await fetch("/v1/chat/completions", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ messages, stream: true, temperature: +$("temp").value, max_tokens: +$("max").value }) });
    if (!res.ok) throw new Error((await res.json()).error.message);
    const reader = res.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let end;
      while ((end = buf.indexOf("\n\n")) >= 0) {  // one event per blank-line-terminated block
        const event = buf.slice(0, end); buf = buf.slice(end + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
          const j = JSON.parse(line.slice(6));
          if (j.error) throw new Error(j.error.message);
          out.textContent += j.choices[0].delta.content || "";
          $("log").scrollTop = $("log").scrollHeight;
        }
      }
    }
    messages.push({ role: "assistant", content: out.textContent });
  } catch (e) {
    out.classList.add("error"); out.textContent += "[" + e.message + "]";
    messages.pop();
  }
  document.body.dataset.busy = "0"; $("send").disabled = false;
}

$("form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  if (!text || document.body.dataset.busy === "1") return;
  $("input").value = "";
  send(text);
});
$("input").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("form").requestSubmit(); } });
$("clear").addEventListener("click", () => { messages = []; $("log").innerHTML = ""; });
</script></body></html>
)html";
