#!/usr/bin/env python3
# Checks docs/api.md against tests/data/api_names.txt (tinygrad's public names, from gen_api_names.py): every name has a
# row, and every row's test column is "not applicable: <reason>", "missing (planned)..." or gtest names (Suite.Name,
# comma-separated) that exist as TEST / TEST_F / TEST_P in tests/. Run: python3 tests/tools/check_api_table.py REPO_ROOT
import pathlib, re, sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
PREFIX = {"tensor": "Tensor.", "operator": "Tensor.", "nn": "nn.", "optim": "nn.optim.", "state": "nn.state."}
names = [PREFIX[k] + n for k, n in (l.split() for l in (root / "tests/data/api_names.txt").read_text().splitlines() if l.strip())]
tests = {f"{m[1]}.{m[2]}" for f in root.glob("tests/**/*.cpp")
         for m in re.finditer(r"^\s*TEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", f.read_text(), re.M)}

rows: dict[str, str] = {}
errors: list[str] = []
for line in (root / "docs/api.md").read_text().splitlines():
  cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))] if line.startswith("|") else []
  if len(cells) != 3 or not cells[0].startswith("`") or set(cells[0]) <= {"-", " ", ":"}: continue
  name, test = cells[0].strip("`"), cells[2]
  if name in rows: errors.append(f"{name}: two rows")
  rows[name] = test
  if test.startswith("not applicable: ") or test.startswith("missing (planned)"): continue
  for t in (x.strip().strip("`") for x in test.split(",")):
    if not re.fullmatch(r"\w+\.\w+", t): errors.append(f"{name}: test column {test!r} is not Suite.Name, 'not applicable: why' or 'missing (planned)'")
    elif t not in tests: errors.append(f"{name}: test {t} does not exist in tests/")
errors += [f"{n}: no row in docs/api.md" for n in names if n not in rows]
for e in errors: print(e)
print(f"{len(names)} names, {len(rows)} rows, {sum(not (t.startswith('not applicable') or t.startswith('missing')) for t in rows.values())} tested, "
      f"{sum(t.startswith('missing') for t in rows.values())} missing, {len(errors)} errors")
sys.exit(1 if errors else 0)
