#!/usr/bin/env python3
# Cook-Toom matrices of the Winograd convolution F(m, r) (Lavin & Gray, arXiv 1509.09308) for the points given, and the
# float32 error of a 2D F(m x m, r x r) convolution against a float64 direct one. For src/tensor/nn_ops.cpp's tables.
#   .venv/bin/python tools/winograd_matrices.py 4 3 0 1 -1 2 -2        # tinygrad's F(4x4,3x3)
#   .venv/bin/python tools/winograd_matrices.py 4 5 0 1 -1 2 -2 1/2 -1/2
# Y = At [(G g Gt) * (Bt d B)] A for one tile: d (m+r-1)^2 inputs, g the r x r weights. The points a_j are the finite
# ones; the last row/column is the point at infinity.
import sys
from fractions import Fraction as Fr

import numpy as np


def poly(roots):  # coefficients, lowest first, of prod (x - a)
  c = [Fr(1)]
  for a in roots: c = [(c[i - 1] if i > 0 else 0) - a * (c[i] if i < len(c) else 0) for i in range(len(c) + 1)]
  return c


def matrices(m, r, pts):
  n = m + r - 1
  assert len(pts) == n - 1, f"F({m},{r}) needs {n - 1} finite points"
  f = [np.prod([a - b for b in pts if b != a], dtype=object) for a in pts]
  G = [[a**k / fa for k in range(r)] for a, fa in zip(pts, f)] + [[Fr(int(k == r - 1)) for k in range(r)]]
  Bt = [poly([b for b in pts if b != a]) + [Fr(0)] for a in pts] + [poly(pts)]
  At = [[a**i for a in pts] + [Fr(int(i == m - 1))] for i in range(m)]
  return G, Bt, At


def check(m, r, G, Bt, At, tiles=2000, seed=0):
  n = m + r - 1
  rng = np.random.default_rng(seed)
  g, d = rng.uniform(-1, 1, (tiles, r, r)), rng.uniform(-2, 2, (tiles, n, n))
  want = np.stack([[[(d[t, y:y + r, x:x + r] * g[t]).sum() for x in range(m)] for y in range(m)] for t in range(tiles)])
  f32 = lambda a: np.array(a, dtype=np.float64).astype(np.float32)
  G32, Bt32, At32 = f32(G), f32(Bt), f32(At)
  U, V = G32 @ g.astype(np.float32) @ G32.T, Bt32 @ d.astype(np.float32) @ Bt32.T
  got = At32 @ (U * V) @ At32.T
  exact = np.array(At, dtype=np.float64) @ ((np.array(G, dtype=np.float64) @ g @ np.array(G, dtype=np.float64).T) *
                                             (np.array(Bt, dtype=np.float64) @ d @ np.array(Bt, dtype=np.float64).T)) @ np.array(At, dtype=np.float64).T
  assert np.abs(exact - want).max() < 1e-9, "matrices do not compute the convolution"
  return np.abs(got - want).max() / np.abs(want).max()


if __name__ == "__main__":
  m, r, pts = int(sys.argv[1]), int(sys.argv[2]), [Fr(p) for p in sys.argv[3:]]
  G, Bt, At = matrices(m, r, pts)
  show = lambda name, M: print(f"{name} = {{" + ", ".join("{" + ", ".join(str(v) for v in row) + "}" for row in M) + "}")
  show("G", G), show("Bt", Bt), show("At", At)
  print(f"float32 max |error| / max |direct| over random tiles: {check(m, r, G, Bt, At):.2e} (direct float32: {np.finfo(np.float32).eps:.1e} eps)")
  print(f"multiplies per output: {(m + r - 1)**2 / m**2:.2f} vs {r * r} direct")
