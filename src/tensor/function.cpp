// tinygrad's @function (function.py): the body runs on the real inputs, then the graph it built is cut loose from
// them (inputs -> PARAMs) and wrapped as a FUNCTION of the inputs and of any implicit ones.
#include "tg/function.h"

#include <algorithm>

#include "tensor/gradient.h"
#include "tensor/tensor_impl.h"
#include "uop/movement.h"
#include "uop/upat.h"

namespace tg {

namespace {
// a buffer (or a realized AFTER/CONTIGUOUS of one) the body reads and the inputs do not give: the next argument
UOp add_implicit(std::vector<UOp>& args, const UOp& x) {
  args.push_back(x);
  return x.param_like(int64_t(args.size()) - 1);
}
const PatternMatcher& pm_implicit_inputs() {
  static const PatternMatcher pm{
      UPat(Ops::BUFFER, {}, {}, {}, "x") >> [](M m) { return add_implicit(m.ctx<std::vector<UOp>>(), m["x"]); },
      UPat(OpSet{Ops::AFTER, Ops::CONTIGUOUS}, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        if (x.op_in_backward_slice_with_self(Ops::PARAM) || !x.op_in_backward_slice_with_self(Ops::BUFFER)) return UOp();
        return add_implicit(m.ctx<std::vector<UOp>>(), x);
      }};
  return pm;
}
}  // namespace

std::vector<Tensor> Function::operator()(const std::vector<Tensor>& inputs) const {
  std::vector<UOp> args;
  for (const Tensor& t : inputs)
    if (const UOp& u = uop_of(t); u.device() && std::find(args.begin(), args.end(), u) == args.end()) args.push_back(u);
  std::vector<Tensor> ret = body_(inputs);
  if (ret.empty()) throw Error("function" + (opts_.name.empty() ? "" : " " + opts_.name) + ": the body returned no tensors");
  std::vector<UOp> outs;
  for (const Tensor& t : ret) outs.push_back(uop_of(t));
  std::unordered_map<UOp, UOp> subs;
  for (size_t i = 0; i < args.size(); i++) subs.emplace(args[i], args[i].param_like(int64_t(i)));
  UOp body = UOp::make(Ops::TUPLE, dtypes::void_, outs).substitute(subs);
  size_t n_explicit = args.size();
  body = graph_rewrite(body, pm_implicit_inputs(), &args, true);
  if (!opts_.allow_implicit && args.size() > n_explicit) {
    std::string msg = "function" + (opts_.name.empty() ? "" : " " + opts_.name) + ": its body reads " +
                      std::to_string(args.size() - n_explicit) + " tensor(s) that are not among its inputs (pass them as inputs, or set allow_implicit):";
    for (size_t i = n_explicit; i < args.size(); i++)
      msg += " " + std::string(args[i].dtype().name()) + (args[i].shape_opt() ? " " + shape_str(args[i].shape()) : "") + " on " + args[i].device().value_or("?");
    throw Error(msg);
  }
  if (opts_.grad_fxn && ret.size() != 1) throw Error("function: a gradient function needs a body with one output, this one has " + std::to_string(ret.size()));
  UOp f = make_function(body, args, call_info_with(opts_.grad_fxn, opts_.name.empty() ? std::nullopt : std::optional(opts_.name)));
  std::vector<Tensor> r;
  for (size_t i = 0; i < outs.size(); i++) r.push_back(wrap(f.gettuple(int64_t(i))));
  return r;
}

}  // namespace tg
