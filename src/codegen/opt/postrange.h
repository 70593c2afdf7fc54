#pragma once
// tinygrad's codegen/opt/postrange.py (the Scheduler: optimizations as range substitutions on the kernel AST, and
// apply_opts) and opt/heuristic.py (hand_coded_optimizations).
//
//   Scheduler k(ast, ren);
//   k.apply_opt(Opt{OptOps::UPCAST, 0, Arg(4)});   // throws KernelOptError when the opt does not apply
//   UOp optimized = k.get_optimized_ast();
#include "renderer/cstyle.h"
#include "uop/args.h"

namespace tg {

struct KernelOptError : Error {
  using Error::Error;
};

struct RendererCaps {  // the renderer's caps (renderer/renderer.h) under the current settings, for opts and gpudims
  bool has_local = false, has_threads = true, has_shared = false;
  int64_t global_max0 = 1;  // threads (CPU) or the first global dim's limit
  int64_t shared_max = 32768;
  int64_t vector_width = 0;  // floats per vector register where SIMD=1 shapes CPU kernels (simd_upcast's lanes)
  std::string device;        // the renderer's device kind ("CUDA": the tf32 tensor cores only with ALLOW_TF32)
  std::vector<TensorCore> tensor_cores;
};
// ren's caps narrowed by the settings: THREADS=0 drops threads, NUM_CPU_THREADS sets their count, SIMD=0 the vector width
RendererCaps caps_of(const CStyleLanguage& ren);

class Scheduler {
 public:
  Scheduler(UOp ast, RendererCaps ren);
  UOp ast;
  RendererCaps ren;
  bool dont_use_locals = false;
  std::vector<Opt> applied_opts;
  std::optional<TensorCore> tensor_core;  // the one OptOps::TC applied

  std::vector<UOp> rngs() const;  // the opt axes, ordered by axis type then axis id
  std::vector<int64_t> full_shape() const;
  std::vector<AxisType> axis_types() const;
  std::vector<int64_t> axes_of(std::initializer_list<AxisType> types) const;
  std::vector<UOp> ranges_of(std::initializer_list<AxisType> types) const;
  std::vector<int64_t> upcastable_dims() const;
  std::vector<int64_t> unrollable_dims() const;
  std::vector<int64_t> output_shape() const;
  std::vector<std::string> shape_str() const;  // each axis as its type's letter and its count: g0 g1 l0 R0 u0 r0
  std::vector<int64_t> shape_str_to_axis(const std::vector<std::string>& names) const;
  int64_t upcast_size() const;
  int64_t upcasted() const { return int64_t(axes_of({AxisType::UPCAST, AxisType::UNROLL}).size()); }
  std::vector<UOp> bufs() const;  // INDEX nodes, last first
  std::vector<UOp> reduceops() const;

  // rng splits into (rng / amount, a new axis of `amount`): the new one is a fresh range, or input_new_rng where given
  std::pair<UOp, UOp> shift_to(const UOp& rng, int64_t amount, AxisType new_type, bool top = false, const UOp& input_new_rng = UOp());
  std::optional<std::pair<UOp, UOp>> apply_opt(const Opt& opt, bool append_opt = true);
  UOp get_optimized_ast(std::optional<std::string> name_override = std::nullopt);
  void convert_loop_to_global();  // on a renderer with locals, the output loops that can be launched become GLOBAL

 private:
  int64_t opt_range_ = 0;
  int64_t real_axis(OptOps op, std::optional<int64_t> axis) const;
  std::vector<UOp> output_rngs() const;
  std::vector<UOp> globalizable_rngs() const;
  std::vector<std::string> colors() const;
  std::optional<std::vector<UOp>> apply_tc_opt(int64_t use_tensor_cores, int64_t axis, int64_t tc_select, int64_t opt_level);
};

Scheduler hand_coded_optimizations(const Scheduler& k);
void apply_threads(Scheduler& k);  // the heuristic's last step: THREAD on a big kernel that has none
void apply_locals(Scheduler& k);   // on a GPU before it: LOCAL on up to three output axes (NOLOCALS=1: none)
// the pass: opts_to_apply, else (unless NOOPT or opts were applied) the hand-coded heuristics; names the kernel
UOp apply_opts(const UOp& ast, const CStyleLanguage& ren);

}  // namespace tg
