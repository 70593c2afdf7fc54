#pragma once
// The UOp behind a tg::Tensor, the live-tensor registry, and the tensor-side realize entry points (tensor.py).
#include <unordered_map>
#include <vector>

#include "schedule/schedule.h"
#include "tg/tensor.h"
#include "uop/uop.h"

namespace tg {

// one live tensor: its current graph. Every one is in the registry while it lives, so a realize can swap the graph of
// every tensor that refers to what was realized (tinygrad's all_tensors)
struct Tensor::Impl {
  UOp uop;
  std::shared_ptr<Impl> grad;  // filled by backward() (gradient.cpp)
  bool is_param = true;        // false for buffers an optimizer leaves alone (BatchNorm's running statistics)
  uint64_t seq;                // creation order: all_tensors() lists tensors as tinygrad's dict does
  explicit Impl(UOp u);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};
struct Schedule::Impl {
  UOp linear;
  VarVals vars;
};
struct TensorAccess {
  using Impl = Tensor::Impl;
  static const std::shared_ptr<Impl>& impl(const Tensor& t) { return t.impl_; }
  static Tensor make(std::shared_ptr<Impl> impl) { return Tensor(std::move(impl)); }
  static const Schedule::Impl& impl(const Schedule& s) { return *s.impl_; }
  static Schedule make(UOp linear, VarVals vars) {
    Schedule s;
    s.impl_ = std::make_shared<const Schedule::Impl>(Schedule::Impl{std::move(linear), std::move(vars)});
    return s;
  }
};
using TensorImpl = TensorAccess::Impl;

inline const UOp& uop_of(const Tensor& t) { return TensorAccess::impl(t)->uop; }
inline Tensor wrap(UOp u) { return TensorAccess::make(std::make_shared<TensorImpl>(std::move(u))); }
inline Tensor lit(ConstVal v) { return wrap(UOp::const_(v)); }  // a weak literal (bool stays bool)

// substitute the map into the graph of every live tensor that reaches one of its keys (_apply_map_to_tensors)
void apply_map_to_tensors(const std::unordered_map<UOp, UOp>& applied_map);
size_t live_tensors();
std::vector<TensorImpl*> all_tensors();  // the live tensors, oldest first

// tinygrad's Tensor.linear_with_vars / schedule_linear: callify, swap the live tensors to their buffers, schedule
std::pair<UOp, VarVals> linear_with_vars(const std::vector<Tensor>& tensors);
UOp schedule_linear(const std::vector<Tensor>& tensors);

// the UOp-level pieces the Tensor ops share (the mixins' primitives)
Tensor alu(const Tensor& self, Ops op, std::initializer_list<Tensor> src = {}, const Arg& arg = {});
std::pair<Tensor, Tensor> broadcasted(const Tensor& self, const Tensor& y, bool reverse = false);
Tensor binop(const Tensor& self, Ops op, const Tensor& x, bool reverse = false);
Tensor const_like(const Tensor& self, ConstVal v, std::optional<DType> dtype = std::nullopt);
Tensor mop_stack(const Tensor& self, const std::vector<Tensor>& others);  // UOp._mop(Ops.STACK)
Tensor reduce_(const Tensor& self, Ops op, const Axis& axis, bool keepdim);
Tensor pad_constant(const Tensor& self, const std::vector<std::pair<int64_t, int64_t>>& pads, ConstVal value);
Tensor cumalu(const Tensor& self, int64_t axis, Ops op);
Tensor split_cumalu(const Tensor& self, int64_t axis, Ops op, const char* name);  // cumalu in two stages along long axes
Tensor full_const(const Shape& shape, ConstVal v, DType dt);  // full(..., buffer=False): the value expanded, no storage
Tensor pool(const Tensor& self, const Shape& k, int64_t stride = 1, int64_t dilation = 1);
Tensor pool(const Tensor& self, const Shape& k, const Shape& stride, const Shape& dilation);  // per-dim stride/dilation
// replace the random state of a device (tests build tinygrad's rand graphs from known key/counter buffers)
void set_rng_state(const std::string& device, const Tensor& key, const Tensor& counter);
int64_t resolve_dim(const Tensor& t, int64_t dim, bool extra = false, const char* op = "dim");
// index == arange(num_classes), the classes along a new axis at dim (tinygrad's _one_hot_along_dim); `op` names errors
Tensor one_hot_along_dim(const Tensor& self, int64_t num_classes, int64_t dim, const char* op);
// x @ w with w packed in panels for the CPU's register tile (tensor/gemm.cpp); nullopt where that does not apply
std::optional<Tensor> packed_dot(const Tensor& x, const Tensor& w);

}  // namespace tg
