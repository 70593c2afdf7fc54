#!/usr/bin/env python3
# tinygrad's side of bench/mnist: the same model (examples/beautiful_mnist.py), Adam, the same random uint8 batch fed
# to a TinyJit-ted step, on the CPU device; ms per step after the two warm-up calls (run, capture), as bench/mnist.
# Run: PYTHONPATH=/work/ref /usr/bin/python3 bench/mnist_tinygrad.py [steps=3] [batch=512]
import sys, time, random
from tinygrad import Tensor, TinyJit, nn, dtypes, Context

class Model:
  def __init__(self):
    self.layers = [nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu, nn.BatchNorm(32), Tensor.max_pool2d,
                   nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu, nn.BatchNorm(64), Tensor.max_pool2d,
                   lambda x: x.flatten(1), nn.Linear(576, 10)]
  def __call__(self, x): return x.sequential(self.layers)

if __name__ == "__main__":
  steps, bs = (int(sys.argv[1]) if len(sys.argv) > 1 else 3), (int(sys.argv[2]) if len(sys.argv) > 2 else 512)
  rng = random.Random(0)
  X = Tensor([rng.randrange(256) for _ in range(bs * 784)], dtype=dtypes.uint8).reshape(bs, 1, 28, 28).realize()
  Y = Tensor([rng.randrange(10) for _ in range(bs)], dtype=dtypes.uint8).realize()
  model = Model()
  opt = nn.optim.Adam(nn.state.get_parameters(model), 1e-3)

  @TinyJit
  def step(x, y):
    with Context(TRAINING=1):
      opt.zero_grad()
      loss = model(x).sparse_categorical_crossentropy(y).backward()
      return loss.realize(*opt.schedule_step())

  times = []
  for _ in range(2 + steps):
    st = time.perf_counter()
    step(X, Y).item()
    times.append(time.perf_counter() - st)
  print(f"tinygrad      {sum(times[2:]) / steps * 1e3:8.1f} ms/step  (first step {times[0]:.2f} s, second (JIT capture) {times[1]:.2f} s)")
