#!/usr/bin/env python3
# What gguf-py's GGUFReader (ggml's own reader) sees in a GGUF file, as JSON: each metadata field's value types and
# contents (nested arrays: types only, which GGUFReader.contents does not decode), each tensor's name, tinygrad-order
# shape, ggml type, data offset and data bytes (hex).
#   read_gguf.py FILE -> {"fields": [{"key", "types", "v"}...], "tensors": [{"name", "shape", "type", "offset", "hex"}...], "alignment"}
import json, sys
from gguf import GGUFReader, GGUFValueType as V

r = GGUFReader(sys.argv[1])
fields = []
for f in r.fields.values():
  if f.name.startswith("GGUF."): continue  # the reader's own entries for the header (version, counts)
  nested = len(f.types) > 1 and f.types[0] == V.ARRAY and f.types[1] == V.ARRAY
  fields.append({"key": f.name, "types": [int(t) for t in f.types], "v": None if nested else f.contents()})
tensors = [{"name": t.name, "shape": [int(x) for x in reversed(t.shape.tolist())], "type": int(t.tensor_type), "offset": int(t.data_offset),
            "hex": t.data.tobytes().hex()} for t in r.tensors]
print(json.dumps({"fields": fields, "tensors": tensors, "alignment": int(r.alignment)}))
