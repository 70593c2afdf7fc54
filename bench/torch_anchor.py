#!/usr/bin/env python3
# PyTorch 2 (PyPI wheel: MKL, oneDNN) as the anchor of bench/conv, bench/infer and bench/mnist: times the same workloads
# as those programs (same shapes, the same model as apps/beautiful_mnist*.h, the same thread count, the same warm-up and
# best-of policy), then runs our bench binaries in the same script run and prints one table of ratios: ours against
# PyTorch 2, and against libtorch (Debian's 1.13, which our benches time in their own process). Run it through
# bench/torch.sh, which installs the wheel into its own venv (never the repo's).
#   bench/torch.sh [--only conv,infer,mnist] [--conv-batch 512] [--conv-case "c2 fwd"] [--images 10000] [--infer-case mlp]
#                  [--steps 10] [--mnist-batches 512,128] [--rounds 1] [--build build]
# NUM_CPU_THREADS: threads of every side (default: the host's cores). BENCH_CPU_TIME=1: process CPU time instead of the
# wall clock for conv and infer, on both sides (use with NUM_CPU_THREADS=1 on a loaded machine). bench/mnist times wall
# clock only and runs its libtorch on all cores; this script also prints PyTorch 2's CPU time per step there.
import argparse, gzip, math, os, re, subprocess, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREADS = int(os.environ.get("NUM_CPU_THREADS") or os.cpu_count())
CPU_TIME = bool(int(os.environ.get("BENCH_CPU_TIME", "0") or 0))
clock = time.process_time if CPU_TIME else time.perf_counter


def best(fn, rounds=3, min_s=0.5):
  # bench/anchor.h's alternate(): one warm-up, then at least `rounds` runs and `min_s` seconds; the best run. There
  # min_s counts both sides; here PyTorch's runs alone fill it (a run or two more, never fewer)
  fn()
  b, total, r = math.inf, 0.0, 0
  while r < rounds or total < min_s:
    t = clock(); fn(); t = clock() - t
    b, total, r = min(b, t), total + t, r + 1
  return b


def uniform(*shape, lo=-1.0, hi=1.0):
  return torch.rand(*shape) * (hi - lo) + lo


# ---- bench/conv: the four convolutions of beautiful_mnist at batch 512, forward (+ bias + relu) and both gradients
CONVS = [("c1", 1, 32, 5, 28), ("c2", 32, 32, 5, 24), ("c3", 32, 64, 3, 10), ("c4", 64, 64, 3, 8)]


def conv_times(bs, case):
  out = {}
  for name, cin, cout, k, hw in CONVS:
    ho = hw - k + 1
    x, w, b = uniform(bs, cin, hw, hw), uniform(cout, cin, k, k, lo=-0.2, hi=0.2), uniform(cout, lo=-0.2, hi=0.2)
    g = uniform(bs, cout, ho, ho)
    for p in ("fwd", "fbr", "dx", "dw"):
      if case not in f"{name} {p}": continue
      if p == "fwd": fn = lambda: F.conv2d(x, w)
      elif p == "fbr": fn = lambda: F.relu(F.conv2d(x, w, b))
      else:  # what autograd calls for a convolution's backward, one gradient at a time as bench/conv asks libtorch
        mask = [p == "dx", p == "dw", False]
        fn = lambda mask=mask: torch.ops.aten.convolution_backward(g, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask)
      with torch.no_grad(): out[f"{name} {p}"] = best(fn)
  return out


# ---- bench/infer
class BeautifulMnist(nn.Module):  # apps/beautiful_mnist_torch.h (max_pool2d as the benchmark pools)
  def __init__(self):
    super().__init__()
    self.c1, self.c2, self.c3, self.c4 = nn.Conv2d(1, 32, 5), nn.Conv2d(32, 32, 5), nn.Conv2d(32, 64, 3), nn.Conv2d(64, 64, 3)
    self.bn1, self.bn2, self.l1 = nn.BatchNorm2d(32), nn.BatchNorm2d(64), nn.Linear(576, 10)

  def forward(self, x):
    x = F.max_pool2d(self.bn1(F.relu(self.c2(F.relu(self.c1(x))))), 2)
    x = F.max_pool2d(self.bn2(F.relu(self.c4(F.relu(self.c3(x))))), 2)
    return self.l1(x.flatten(1))


def test_images(n):
  with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f: raw = f.read()
  return torch.frombuffer(bytearray(raw[16:16 + n * 784]), dtype=torch.uint8).reshape(n, 1, 28, 28)


def mnist_eval(images, bs):
  net = BeautifulMnist().eval()
  for bn in (net.bn1, net.bn2):  # BatchNorm on running statistics, set to random values as bench/infer does
    c = bn.running_mean.shape[0]
    bn.running_mean.copy_(uniform(c, lo=-0.5, hi=0.5)), bn.running_var.copy_(uniform(c, lo=0.5, hi=2.0))
  xs = list(test_images(images // bs * bs).split(bs))
  fwd = lambda x: net((x.float() - 72.94) / 90.02)
  with torch.no_grad(): return best(lambda: [fwd(x) for x in xs], rounds=2, min_s=0)


def mlp():
  m = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
  x = uniform(1000, 784)
  with torch.no_grad(): return best(lambda: m(x))


D, H, B, T = 384, 8, 8, 128


class Block(nn.Module):  # bench/infer's pre-LayerNorm block: causal attention of 8 heads of 48, tanh-gelu MLP of 4x
  def __init__(self):
    super().__init__()
    self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
    self.qkv, self.proj, self.fc1, self.fc2 = nn.Linear(D, 3 * D), nn.Linear(D, D), nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

  def forward(self, x):  # PyTorch 2's own attention kernel (the stronger anchor) instead of libtorch 1.13's written-out one
    q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
    h = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D))
    return h + self.fc2(F.gelu(self.fc1(self.ln2(h)), approximate="tanh"))


def block():
  m, x = Block(), uniform(B, T, D)
  with torch.no_grad(): return best(lambda: m(x))


def infer_times(images, case):
  want = lambda name: not case or name == case or name.startswith(case + "-")
  out = {}
  for bs in (1000, 1):  # fewer images than one batch: skipped, as bench/infer skips it
    if want(f"mnist-{bs}") and images >= bs: out[f"mnist eval bs {bs}"] = mnist_eval(images, bs)
  if want("mlp"): out["mlp 784-1024-1024-10 bs 1000"] = mlp()
  if want("block"): out["transformer block"] = block()
  return out


# ---- bench/mnist: the training step (Adam 1e-3, cross entropy, random images and labels), mean of `steps` after 2 warm-up
def mnist_train(steps, bs):
  torch.manual_seed(0)
  net = BeautifulMnist()
  opt = torch.optim.Adam(net.parameters(), lr=1e-3)
  x, y = torch.randint(0, 256, (bs, 1, 28, 28), dtype=torch.uint8).float(), torch.randint(0, 10, (bs,))

  def step():
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    return loss.item()

  for _ in range(2): step()
  w, c = time.perf_counter(), time.process_time()
  for _ in range(steps): step()
  return (time.perf_counter() - w) / steps, (time.process_time() - c) / steps


# ---- our bench binaries
def run_ours(build, prog, args):
  cmd = [os.path.join(build, "bench", prog)] + [str(a) for a in args]
  print("  $ " + " ".join(cmd), flush=True)
  r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
  sys.stdout.write("".join("  | " + line + "\n" for line in r.stdout.splitlines()))
  if r.returncode != 0: sys.stdout.write(r.stderr[-2000:]); print(f"  {prog} exited {r.returncode}")
  return r.stdout


def parse_conv(text):  # "c2  fwd  32x32 ... 12.34 ms  ... GFLOP/s  libtorch  23.45 ms ..."
  return {f"{m[1]} {m[2]}": (float(m[3]) / 1e3, float(m[4]) / 1e3)
          for m in re.finditer(r"^(c\d)\s+(\w+)\s.*?\s([\d.]+) ms .*?libtorch\s+([\d.]+) ms", text, re.M)}


def parse_infer(text):  # "<name>   123.45 ms   ... libtorch   234.56 ms ..."
  return {m[1]: (float(m[2]) / 1e3, float(m[3]) / 1e3) for m in re.finditer(r"^(\S.*?)\s+([\d.]+) ms\s+\S+ \S+\s+libtorch\s+([\d.]+) ms", text, re.M)}


def parse_mnist(text):
  ours, lt = re.search(r"tinygrad\.cpp\s+([\d.]+) ms/step", text), re.search(r"libtorch\s+([\d.]+) ms/step", text)
  return (float(ours[1]) / 1e3, float(lt[1]) / 1e3) if ours and lt else None


def keep_best(acc, new, who=""):  # per workload, the best time of each side over the rounds (PyTorch 2's printed as it comes)
  for k, v in new.items():
    if who: print(f"  {who} {k}: {v * 1e3:.2f} ms", flush=True)
    acc[k] = v if k not in acc else tuple(min(a, b) for a, b in zip(acc[k], v)) if isinstance(v, tuple) else min(acc[k], v)


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--only", default="conv,infer,mnist")
  ap.add_argument("--build", default=os.path.join(ROOT, "build"))
  ap.add_argument("--conv-batch", type=int, default=512)
  ap.add_argument("--conv-case", default="")
  ap.add_argument("--images", type=int, default=10000)
  ap.add_argument("--infer-case", default="")
  ap.add_argument("--steps", type=int, default=10)
  ap.add_argument("--mnist-batches", default="512,128")
  ap.add_argument("--rounds", type=int, default=1, help="PyTorch 2, then ours, this many times; each side's best")
  a = ap.parse_args()
  only = set(a.only.split(","))
  torch.set_num_threads(THREADS)
  print(f"PyTorch {torch.__version__} ({torch.backends.mkldnn.is_available() and 'oneDNN' or 'no oneDNN'}, "
        f"{'MKL' if torch.backends.mkl.is_available() else 'no MKL'}, CPU capability {torch.backends.cpu.get_cpu_capability()}), "
        f"{THREADS} threads (NUM_CPU_THREADS), {'BENCH_CPU_TIME: process CPU time' if CPU_TIME else 'wall clock'}, "
        f"load average {os.getloadavg()[0]:.1f}", flush=True)
  rows = []  # (bench, workload, pytorch2 s, ours s, libtorch s or None, goal)
  benches = {"conv": (lambda: conv_times(a.conv_batch, a.conv_case), [a.conv_batch, a.conv_case], parse_conv),
             "infer": (lambda: infer_times(a.images, a.infer_case), [a.images, a.infer_case], parse_infer)}
  for bench, (measure, args, parse) in benches.items():
    if bench not in only: continue
    pt, ours = {}, {}
    for _ in range(a.rounds): keep_best(pt, measure(), "PyTorch 2"), keep_best(ours, parse(run_ours(a.build, bench, args)))
    rows += [(bench, k, pt[k], *ours.get(k, (None, None)), 1.0) for k in pt]
  if "mnist" in only:
    for bs in [int(b) for b in a.mnist_batches.split(",")]:
      pt, ours = None, None
      for _ in range(a.rounds):
        w, c = mnist_train(a.steps, bs)
        print(f"  PyTorch 2 train step batch {bs}: {w * 1e3:.1f} ms/step wall, {c * 1e3:.1f} ms/step CPU", flush=True)
        pt = w if pt is None else min(pt, w)
        o = parse_mnist(run_ours(a.build, "mnist", [a.steps, bs]))
        ours = o if ours is None or o is None else tuple(min(p, q) for p, q in zip(ours, o))
      rows.append(("mnist", f"train step bs {bs}", pt, *(ours or (None, None)), 1.5))

  fmt = lambda s: f"{s * 1e3:10.2f}" if s is not None else f"{'-':>10}"
  ratio = lambda a, b: f"{a / b:6.2f}x" if a is not None and b is not None else f"{'-':>7}"
  print(f"\n{'bench':6} {'workload':30} {'PyTorch 2':>10} {'ours':>10} {'libtorch':>10}  {'vs PT2':>7} {'vs lt':>7} {'vs best':>7}  goal (ms; ratio = anchor time / ours)")
  for bench, name, pt, ours, lt, goal in rows:
    fastest = min(t for t in (pt, lt) if t is not None)
    r = fastest / ours if ours else None
    print(f"{bench:6} {name:30} {fmt(pt)} {fmt(ours)} {fmt(lt)}  {ratio(pt, ours)} {ratio(lt, ours)} {ratio(fastest, ours)}  "
          f">= {goal}x{'' if r is None else ' met' if r >= goal else ' not met'}")


if __name__ == "__main__":
  main()
