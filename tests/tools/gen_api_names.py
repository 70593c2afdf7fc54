#!/usr/bin/env python3
# The public names of tinygrad's API at a9069c177a, read from its source by AST (nothing imported): every name of
# dir(Tensor) without a leading underscore (Tensor's methods, properties and class attributes and those of the mixins it
# inherits from), the operator dunders Tensor defines (tinygrad documents them as the Python operators), and the public
# classes / functions of tinygrad.nn, tinygrad.nn.optim and tinygrad.nn.state. One "kind name" per line.
# Run from the repo root with a tinygrad checkout at a9069c177a:
#   python3 tests/tools/gen_api_names.py TINYGRAD_DIR > tests/data/api_names.txt
import ast, pathlib, sys

root = pathlib.Path(sys.argv[1])
# the Python operators; __init__, __repr__, __hash__, __bool__, __del__ ... are not API a C++ port names
OPERATORS = {f"__{n}__" for n in """add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow matmul rmatmul
  and rand or ror xor rxor lshift rlshift rshift rrshift neg invert pos abs lt gt le ge eq ne getitem setitem delitem len
  iadd isub imul itruediv ifloordiv imod ipow imatmul iand ior ixor ilshift irshift""".split()}

def parse(mod: str) -> ast.Module: return ast.parse((root / (mod.replace(".", "/") + ".py")).read_text())

def class_names(mod: str, cls: str) -> set[str]:
  tree = parse(mod)
  imports = {a.asname or a.name: n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module for a in n.names}
  node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
  names: set[str] = set()
  for b in node.bases:
    if isinstance(b, ast.Name) and b.id in imports and imports[b.id].startswith("tinygrad"): names |= class_names(imports[b.id], b.id)
    elif isinstance(b, ast.Name) and any(isinstance(n, ast.ClassDef) and n.name == b.id for n in tree.body): names |= class_names(mod, b.id)
  for n in node.body:
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)): names.add(n.name)
    elif isinstance(n, ast.Assign): names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name): names.add(n.target.id)
  return names

def module_names(mod: str) -> list[str]:
  return sorted(n.name for n in parse(mod).body if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and not n.name.startswith("_"))

tensor = class_names("tinygrad.tensor", "Tensor")
for n in sorted(x for x in tensor if not x.startswith("_")): print("tensor", n)
for n in sorted(x for x in tensor if x in OPERATORS): print("operator", n)
for kind, mod in (("nn", "tinygrad.nn.__init__"), ("optim", "tinygrad.nn.optim"), ("state", "tinygrad.nn.state")):
  for n in module_names(mod): print(kind, n)
