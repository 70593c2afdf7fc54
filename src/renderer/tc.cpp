#include "renderer/tc.h"

#include <algorithm>
#include <map>

#include "tg/error.h"

namespace tg {

namespace {
int64_t count_of(const std::vector<std::string>& opts, char c) { return std::count_if(opts.begin(), opts.end(), [&](auto& o) { return o[0] == c; }); }
std::vector<std::string> names(char c, int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; i++) out.push_back(c + std::to_string(i));
  return out;
}
}  // namespace

int64_t TensorCore::reduce_axes() const {
  int64_t n = 0;
  while ((int64_t(1) << (n + 1)) <= dims[2]) n++;
  return n;
}

std::vector<std::string> TensorCore::base_shape_str() const {
  std::vector<std::string> ret;
  std::map<char, int64_t> cnt;
  for (auto& o : opts) ret.push_back(o[0] + std::to_string(cnt[o[0]]++));
  for (auto& r : names('r', reduce_axes())) ret.push_back(r);
  return ret;
}

std::vector<std::string> TensorCore::base_upcast_axes() const {
  std::vector<std::string> ret = names('r', reduce_axes()), u = names('u', count_of(opts, 'u'));
  ret.insert(ret.end(), u.begin(), u.end());
  std::reverse(ret.begin(), ret.end());
  return ret;
}

std::array<std::vector<int64_t>, 2> TensorCore::permutes_for_shape_str(const std::vector<std::string>& shape_str) const {
  std::vector<std::string> fwd = names('l', count_of(opts, 'l')), u = names('u', count_of(opts, 'u')), r = names('r', reduce_axes());
  fwd.insert(fwd.end(), u.begin(), u.end());
  fwd.insert(fwd.end(), r.begin(), r.end());
  std::array<std::vector<int64_t>, 2> ret;
  for (size_t k = 0; k < 2; k++) {
    std::map<std::string, std::string> remap;
    size_t i = 0;
    for (auto& part : swizzle[k])
      for (auto& s : part) remap[fwd.at(i++)] = s;
    for (size_t j = 0; j < shape_str.size(); j++) {
      auto it = remap.find(shape_str[j]);
      ret[k].push_back(it == remap.end() ? int64_t(j)
                                         : int64_t(std::find(shape_str.begin(), shape_str.end(), it->second) - shape_str.begin()));
    }
  }
  return ret;
}

std::string TensorCore::str() const {
  std::string s = "WMMA";
  for (auto d : dims) s += "_" + std::to_string(d);
  return s + "_" + std::string(dtype_in.c_name()) + "_" + std::string(dtype_out.c_name());
}

namespace {
using S = std::vector<std::string>;
using Swizzle = std::array<std::array<S, 3>, 2>;
const S cuda_tc_opts{"u0", "l0", "l0", "l1", "l1", "l1", "u1"};  // every shape with M=16, N=8

std::vector<TensorCore> cuda_tcs(std::array<int64_t, 3> dims, std::array<int64_t, 3> ept, const Swizzle& sw,
                                 std::vector<std::pair<DType, DType>> dts) {
  std::vector<TensorCore> out;
  for (auto [di, dout] : dts) out.push_back(TensorCore{dims, 32, ept, di, dout, cuda_tc_opts, sw});
  return out;
}
// https://docs.nvidia.com/cuda/parallel-thread-execution/#warp-level-matrix-multiply-accumulate-instructions
std::vector<TensorCore> cuda_81616() {
  return cuda_tcs({8, 16, 16}, {8, 4, 4},
                  {{{S{"r1", "r2", "l2", "l3", "l4"}, S{"u1", "r3"}, S{"l0", "l1", "u0", "r0"}},
                    {S{"r1", "r2", "u0", "l0", "l1"}, S{"r0", "r3"}, S{"l2", "l3", "l4", "u1"}}}},
                  {{dtypes::half, dtypes::float_}, {dtypes::bfloat16, dtypes::float_}, {dtypes::half, dtypes::half}});
}
std::vector<TensorCore> cuda_81632_f8() {
  return cuda_tcs({8, 16, 32}, {16, 8, 4},
                  {{{S{"r2", "r3", "l2", "l3", "l4"}, S{"u1", "r4"}, S{"l0", "l1", "u0", "r0", "r1"}},
                    {S{"r2", "r3", "u0", "l0", "l1"}, S{"r1", "r4"}, S{"l2", "l3", "l4", "u1", "r0"}}}},
                  {{dtypes::fp8e4m3, dtypes::float_}, {dtypes::fp8e5m2, dtypes::float_}});
}
std::vector<TensorCore> cuda_8168_f16() {
  return cuda_tcs({8, 16, 8}, {4, 2, 4},
                  {{{S{"r1", "r2", "l2", "l3", "l4"}, S{"r0", "u1"}, S{"l0", "l1", "u0"}},
                    {S{"r1", "r2", "u0", "l0", "l1"}, S{"u1", "r0"}, S{"l2", "l3", "l4"}}}},
                  {{dtypes::half, dtypes::float_}, {dtypes::half, dtypes::half}});
}
std::vector<TensorCore> cuda_8168_tf32() {
  return cuda_tcs({8, 16, 8}, {4, 2, 4},
                  {{{S{"r0", "r1", "l2", "l3", "l4"}, S{"u1", "r2"}, S{"l0", "l1", "u0"}},
                    {S{"r0", "r1", "u0", "l0", "l1"}, S{"u1", "r2"}, S{"l2", "l3", "l4"}}}},
                  {{dtypes::float_, dtypes::float_}});
}
template <class... V> std::vector<TensorCore> cat(V... v) {
  std::vector<TensorCore> out;
  (out.insert(out.end(), v.begin(), v.end()), ...);
  return out;
}
}  // namespace

std::vector<TensorCore> cuda_tensor_cores(const std::string& arch) {
  if (arch.size() < 5 || arch.rfind("sm_", 0) != 0 || arch.size() > 7 || arch.find_first_not_of("0123456789", 3) != std::string::npos)
    throw Error("CUDA: '" + arch + "' is not a GPU arch (sm_90, sm_89, ...)");
  int ver = std::stoi(arch.substr(3));
  if (ver >= 89) return cat(cuda_81616(), cuda_8168_f16(), cuda_8168_tf32(), cuda_81632_f8());
  if (ver >= 80) return cat(cuda_81616(), cuda_8168_f16(), cuda_8168_tf32());
  if (ver >= 75) return cuda_8168_f16();
  return {};
}

}  // namespace tg
