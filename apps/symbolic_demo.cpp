// The symbolic engine at work (build/symbolic_demo): index expressions as rangeify builds them, printed before and
// after simplification, and one UOp graph.
#include <iostream>

#include "tg/tg.h"
#include "uop/symbolic.h"

using namespace tg;

static void show(const char* what, const UOp& e) {
  UOp s = e.simplify();
  std::cout << what << "\n  before (" << e.toposort().size() << " nodes): " << e.render(false) << "\n  after  (" << s.toposort().size()
            << " nodes): " << s.render(false) << "\n";
}

int main() {
  std::cout << "tinygrad.cpp symbolic engine demo\n\n";
  UOp r0 = UOp::range(8, 0), r1 = UOp::range(8, 1), r2 = UOp::range(8, 2);
  UOp n = UOp::variable("n", 1, 64);
  show("index of a reshape (8,8,8)->(512,) then back, middle axis", ((r0 * 64 + r1 * 8 + r2) / 8) % 8);
  show("a permuted view flattened and unflattened", (r2 * 64 + r0 * 8 + r1) / 64 + (r2 * 64 + r0 * 8 + r1) % 8);
  show("div/mod recombination", (r0 * 8 + r1) % 8 + ((r0 * 8 + r1) / 8) * 8);
  show("a comparison made constant by the ranges", (r0 * 8 + r1) < 64);
  show("gcd folding of a comparison", (r0 * 4 + r1 * 8) < 6);
  show("a variable denominator", (n * r0 + n * 3) / n);
  show("where folding", (r0 < 4).where((r0 < 6).where(r1, r2), r2));
  UOp valid = r0 < 4, idx = (r0 + 4) / 8 + r1;
  std::cout << "simplified given valid " << valid.render(false) << ": " << idx.render(false) << " -> "
            << uop_given_valid(valid, idx).render(false) << "\n\n";
  std::cout << "the graph of " << (((r0 * 64 + r1 * 8 + r2) / 8) % 8).render(false) << ":\n" << (((r0 * 64 + r1 * 8 + r2) / 8) % 8).str() << "\n";
  return 0;
}
