#pragma once
// Rangeify (tinygrad's schedule/indexing.py): decide what is realized, give every node the RANGEs it is computed
// over, and turn movement ops into index math on those ranges (apply_movement_op: uop/movement.h).
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "uop/args.h"
#include "uop/upat.h"

namespace tg {

struct IndexingContext {
  // realized nodes -> the axes realized (nullopt until rangeify reaches the node)
  std::unordered_map<UOp, std::optional<std::vector<int64_t>>> realize_map;
  std::unordered_set<UOp> non_removable;
  // node -> (input ranges, output ranges)
  std::unordered_map<UOp, std::pair<std::vector<UOp>, std::vector<UOp>>> range_map;
  int64_t range_idx = 0;
  UOp new_range(int64_t s, AxisType axistype = AxisType::WEAK);
  UOp new_range(const UOp& s, AxisType axistype = AxisType::WEAK);  // a symbolic size: a RANGE to it
};

// axes of out_shape that src_shape is broadcast along (added on the left, or a 1 expanded)
std::vector<int64_t> broadcast_axes(const Shape& src_shape, const Shape& out_shape);
std::vector<int64_t> broadcast_axes(const UOp& src, const UOp& out);  // of the nodes' shapes, symbolic ones too

UOp run_rangeify(const UOp& tsink);

}  // namespace tg
