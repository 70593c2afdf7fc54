#!/usr/bin/env python3
# Cold overhead, tinygrad.cpp against tinygrad, alternating: each round times every graph on our side (bench/overhead
# --serve, a child process) and then on tinygrad's (in this process), so both sides see the same machine state; the
# ratio reported is the median of the per-round ratios. What "cold" times is bench/overhead.cpp's and
# bench/overhead_tinygrad.py's (build the graph, schedule with the schedule cache off, render every kernel).
# Run: PYTHONPATH=/work/ref /usr/bin/python3 bench/overhead_ab.py BUILD/bench/overhead [rounds]
import os, sys, subprocess, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from overhead_tinygrad import GRAPHS, cold

def tinygrad_cold(fn):
  reps, spent, ts = 0, 0.0, []
  while reps < 5 or spent < 1.0:  # at least five runs and a second of them
    t, _ = cold(fn, 1)
    ts.append(t); spent += t; reps += 1
  return statistics.median(ts)

if __name__ == "__main__":
  ours = subprocess.Popen([sys.argv[1], "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
  for fn in GRAPHS.values(): cold(fn, 2)  # warm tinygrad's imports and caches once
  res = {name: [] for name in GRAPHS}
  for r in range(rounds):
    for name, fn in GRAPHS.items():
      ours.stdin.write(f"cold {name}\n"); ours.stdin.flush()
      line = ours.stdout.readline()
      if not line or line.startswith("error"): sys.exit(f"bench/overhead --serve: {line.strip() or 'no answer'}")
      res[name].append((float(line) / 1e3, tinygrad_cold(fn)))
  ours.stdin.close(); ours.wait()
  for name, rs in res.items():
    ratios = sorted(t / o for o, t in rs)
    print(f"{name:8s} cold over {rounds} alternating rounds: ours {statistics.median(o for o, _ in rs)*1e3:7.3f} ms, "
          f"tinygrad {statistics.median(t for _, t in rs)*1e3:8.2f} ms, tinygrad.cpp is {statistics.median(ratios):5.1f}x faster "
          f"(rounds {ratios[0]:.1f}x - {ratios[-1]:.1f}x)")
