"""Writes PyTorch checkpoints with real torch.save (Debian's python3-torch, /usr/bin/python3) for tests/nn/test_torch_load.cpp.
  make_torch_files.py DIR -> DIR/*.pt, *.pth, archive.zip, archive.tar and DIR/manifest.json
manifest.json: for each file, the tensors torch.load returns, flattened as torch_load does (nested dict keys joined with
'.', list items by index, non-tensor values left out): dtype, shape and the bytes of t.contiguous() in hex."""
import io, json, os, pickle, struct, sys, tarfile, zipfile
import torch

out = sys.argv[1]
torch.manual_seed(0)

class Net(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.conv = torch.nn.Conv2d(2, 3, 3)
    self.bn = torch.nn.BatchNorm2d(3)
    self.fc = torch.nn.Linear(4, 5)
    self.emb = torch.nn.Embedding(6, 2)

def tensors():
  base = torch.randn(4, 6)
  shared = torch.arange(24, dtype=torch.float32)
  return {
    "f32": torch.randn(2, 3), "f16": torch.randn(3).half(), "bf16": torch.randn(2, 2).bfloat16(), "f64": torch.randn(2).double(),
    "i64": torch.tensor([-(2**40), 3, 2**62]), "i32": torch.tensor([[-7, 8]], dtype=torch.int32), "i16": torch.tensor([-300, 301], dtype=torch.int16),
    "i8": torch.tensor([-128, 127], dtype=torch.int8), "u8": torch.tensor([0, 200, 255], dtype=torch.uint8), "bool": torch.tensor([True, False, True]),
    "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 3), "ones1": torch.ones(1, 3, 1),
    "transposed": base.t(), "permuted": torch.randn(2, 3, 4).permute(2, 0, 1), "sliced": base[1:3, 2:5], "strided": base[::2, ::3],
    "expanded": torch.randn(3, 1).expand(3, 4), "row": base[2], "col": base[:, 1], "shared_a": shared[:10], "shared_b": shared[5:].view(19),
    "half_t": torch.randn(3, 2).half().t(), "bf16_t": torch.randn(3, 2).bfloat16().t(),
  }

def flat(obj, prefix, res):
  if isinstance(obj, torch.Tensor):
    t = obj.detach().contiguous()
    raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
    res[prefix] = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "hex": raw.numpy().tobytes().hex()}
  elif isinstance(obj, dict):
    for k, v in obj.items(): flat(v, f"{prefix}.{k}" if prefix else str(k), res)
  elif isinstance(obj, (list, tuple)):
    for i, v in enumerate(obj): flat(v, f"{prefix}.{i}" if prefix else str(i), res)
  return res

manifest = {}
def save(name, obj, **kw):
  torch.save(obj, os.path.join(out, name), **kw)
  back = torch.load(os.path.join(out, name))  # the file reads back in torch as what was saved
  manifest[name] = flat(back, "", {})

net = Net()
sd = net.state_dict()
save("net.pt", sd)
save("net_legacy.pt", sd, _use_new_zipfile_serialization=False)
t = tensors()
save("tensors.pt", t)
save("tensors_legacy.pt", t, _use_new_zipfile_serialization=False)
save("checkpoint.pth", {"model": sd, "epoch": 7, "name": "run", "opt": {"lr": 0.1, "moments": [torch.randn(2), torch.randn(3)]}})
save("params.pt", {"w": torch.nn.Parameter(torch.randn(2, 2)), "b": torch.nn.Parameter(torch.randn(2))})
save("bare.pt", torch.randn(3, 2))

# what torch_load refuses: overlapping strides, a dtype tinygrad.cpp has no storage type for
torch.save({"overlap": torch.arange(10.).as_strided((3, 4), (2, 1))}, os.path.join(out, "overlap.pt"))
torch.save({"c": torch.zeros(2, dtype=torch.complex64)}, os.path.join(out, "complex.pt"))

# the zip checkpoint again with every member deflated (what zip tools may produce)
with zipfile.ZipFile(os.path.join(out, "tensors.pt")) as zi, zipfile.ZipFile(os.path.join(out, "deflated.pt"), "w", zipfile.ZIP_DEFLATED) as zo:
  for info in zi.infolist(): zo.writestr(info.filename, zi.read(info.filename))
manifest["deflated.pt"] = manifest["tensors.pt"]

# plain archives for zip_extract / tar_extract: member -> bytes in hex
members = {"a.txt": b"hello", "dir/b.bin": bytes(range(256)) * 3, "empty": b""}
with zipfile.ZipFile(os.path.join(out, "archive.zip"), "w") as z:
  for i, (k, v) in enumerate(members.items()): z.writestr(k, v, zipfile.ZIP_DEFLATED if i == 1 else zipfile.ZIP_STORED)
with tarfile.open(os.path.join(out, "archive.tar"), "w") as tf:
  for k, v in members.items():
    ti = tarfile.TarInfo(k); ti.size = len(v); tf.addfile(ti, io.BytesIO(v))
  ti = tarfile.TarInfo("subdir"); ti.type = tarfile.DIRTYPE; tf.addfile(ti)
manifest["archives"] = {k: v.hex() for k, v in members.items()}

# torch's oldest format (a tar of 'storages', 'tensors' and 'pickle'), which torch.load still reads but no longer writes:
# written here by the layout torch/serialization.py's legacy_load reads, then checked by loading it with torch.load
class Ref:  # a tensor of the 'tensors' file, pickled as its persistent id
  def __init__(self, i): self.i = i
def old_tar(path, tensors):
  storages, tens, sd = io.BytesIO(), io.BytesIO(), {}
  storages.write(pickle.dumps(len(tensors), protocol=2))
  tens.write(pickle.dumps(len(tensors), protocol=2))
  for i, (k, v) in enumerate(tensors.items()):
    stname = {torch.float32: "FloatStorage", torch.int64: "LongStorage", torch.float16: "HalfStorage"}[v.dtype]
    data = v.contiguous().view(-1).numpy().tobytes()
    # a storage: pickle (key, location, storage type), int64 element count, data
    storages.write(pickle.dumps((100 + i, "cpu", getattr(torch, stname)), protocol=2))
    storages.write(struct.pack("<q", v.numel())); storages.write(data)
    # a tensor: pickle (key, storage key, tensor type), int32 ndim, 4 pad bytes, sizes, strides, int64 storage offset
    tens.write(pickle.dumps((i, 100 + i, getattr(torch, stname.replace("Storage", "Tensor"))), protocol=2))
    tens.write(struct.pack("<i", v.dim()) + b"\0" * 4 + struct.pack(f"<{v.dim()}q", *v.shape) + struct.pack(f"<{v.dim()}q", *v.contiguous().stride()) + struct.pack("<q", 0))
  storages.write(pickle.dumps([], protocol=2))  # no storage views
  class P(pickle.Pickler):
    def persistent_id(self, o): return str(o.i) if isinstance(o, Ref) else None
  pk = io.BytesIO(); P(pk, protocol=2).dump({k: Ref(i) for i, k in enumerate(tensors)})
  with tarfile.open(path, "w") as tf:
    for name, b in (("storages", storages), ("tensors", tens), ("pickle", pk)):
      ti = tarfile.TarInfo(name); ti.size = len(b.getvalue()); tf.addfile(ti, io.BytesIO(b.getvalue()))
old = {"w": torch.randn(2, 3), "n": torch.tensor([5, -6]), "h": torch.randn(4).half()}
old_tar(os.path.join(out, "old_tar.pt"), old)
back = torch.load(os.path.join(out, "old_tar.pt"))
assert all(torch.equal(back[k], v) for k, v in old.items()), "torch.load does not read the tar checkpoint back"
manifest["old_tar.pt"] = flat(back, "", {})

json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"), indent=1)
