#!/usr/bin/env python3
# The layer rule of src/ (docs/ARCHITECTURE.md), run by ctest: a folder includes only itself and the folders below it.
#   python3 tests/tools/layers.py [ROOT]   prints every include that points up, exits 1 if there is one
import os, re, sys

ORDER = ["util", "uop", "renderer", "runtime", "codegen", "schedule", "engine", "tensor", "nn", "llm"]
root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
src = os.path.join(root, "src")
bad, unknown = [], set()
for d, _, files in os.walk(src):
  me = os.path.relpath(d, src).split(os.sep)[0]
  for f in sorted(x for x in files if x.endswith((".h", ".cpp"))):
    if me not in ORDER: unknown.add(me); continue
    for n, line in enumerate(open(os.path.join(d, f), errors="replace"), 1):
      m = re.match(r'\s*#\s*include\s+"([^"/]+)/', line)
      if not m or not os.path.isdir(os.path.join(src, m.group(1))): continue  # tg/... public headers, same-folder files
      other = m.group(1)
      if other not in ORDER: unknown.add(other)
      elif ORDER.index(other) > ORDER.index(me): bad.append(f"{os.path.relpath(os.path.join(d, f), root)}:{n}: {me} includes {other}")
for b in bad: print(b)
if unknown: print("folders not in the layer order:", ", ".join(sorted(unknown)))
print(f"layers: {len(bad)} upward includes; order: {' < '.join(ORDER)}")
sys.exit(1 if bad or unknown else 0)
