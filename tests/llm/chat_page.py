#!/usr/bin/env python3
# tg-llm serve's chat page in headless Chromium, driven over the DevTools protocol with the standard library only
# (--remote-debugging-pipe: JSON messages ending in NUL, commands on fd 3, replies on fd 4): loads the page, types a
# message into it, presses Enter and waits until the streamed reply is done.
#   chat_page.py URL MESSAGE TEMPERATURE MAX_TOKENS
#   -> JSON {"reply": the assistant's text in the DOM, "updates": DOM changes while it streamed, "error": bool}
import json, os, shutil, subprocess, sys, tempfile, time

url, message, temperature, max_tokens = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
cmd_r, cmd_w = os.pipe()
out_r, out_w = os.pipe()

def child_fds():  # via fresh copies, in case the pipes already sit on 3 or 4
  a, b = os.dup(cmd_r), os.dup(out_w)
  os.dup2(a, 3), os.dup2(b, 4)

profile = tempfile.mkdtemp(prefix="tg_chromium_")
chrome = subprocess.Popen([os.environ.get("CHROMIUM", "chromium"), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                           "--no-first-run", "--no-default-browser-check", f"--user-data-dir={profile}", "about:blank"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=child_fds)
os.close(cmd_r), os.close(out_w)
buf, next_id, deadline = b"", 0, time.time() + 60

def call(method, session=None, **params):
  global buf, next_id
  next_id += 1
  msg = {"id": next_id, "method": method, "params": params}
  if session: msg["sessionId"] = session
  os.write(cmd_w, json.dumps(msg).encode() + b"\0")
  while True:  # events and other replies are skipped
    while b"\0" not in buf:
      if time.time() > deadline: raise TimeoutError(f"no reply to {method}")
      chunk = os.read(out_r, 1 << 16)
      if not chunk: raise RuntimeError("chromium exited")
      buf += chunk
    raw, buf = buf.split(b"\0", 1)
    r = json.loads(raw)
    if r.get("id") == next_id:
      if "error" in r: raise RuntimeError(f"{method}: {r['error']}")
      return r["result"]

def wait_for(session, expression):
  while time.time() < deadline:
    r = call("Runtime.evaluate", session, expression=expression, returnByValue=True)["result"]
    if r.get("value"): return r["value"]
    time.sleep(0.05)
  raise TimeoutError(f"waiting for {expression}")

try:
  target = call("Target.createTarget", url=url)["targetId"]
  s = call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
  wait_for(s, "document.readyState === 'complete' && !!document.getElementById('input')")
  call("Runtime.evaluate", s, expression=f"""document.getElementById('temp').value = '{temperature}';
    document.getElementById('max').value = '{max_tokens}';
    window.updates = 0;
    new MutationObserver(() => window.updates++).observe(document.getElementById('log'), {{subtree: true, childList: true, characterData: true}});
    document.getElementById('input').focus();""")
  call("Input.insertText", s, text=message)
  for kind in ("keyDown", "keyUp"):
    call("Input.dispatchKeyEvent", s, type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13)
  wait_for(s, "document.querySelectorAll('.assistant').length === 1 && document.body.dataset.busy === '0'")
  r = call("Runtime.evaluate", s, returnByValue=True, expression="""({reply: document.querySelector('.assistant').textContent,
    user: document.querySelector('.user').textContent, error: document.querySelector('.assistant').classList.contains('error'),
    updates: window.updates})""")["result"]["value"]
  print(json.dumps(r))
finally:
  chrome.kill(), chrome.wait()
  shutil.rmtree(profile, ignore_errors=True)
