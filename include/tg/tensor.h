#pragma once
// tg::Tensor: tinygrad's lazy Tensor. Every op builds the same UOp graph tinygrad's Tensor builds; nothing runs until
// data is read or realize() is called. A Tensor is a handle: copies share one tensor (as Python names share one object),
// so assign() and realize() are seen through every copy. Names are tinygrad's, in snake_case; a name that is a C++ keyword
// or type gets a trailing underscore (float_, int_, bool_, double_, long_, short_).
//
//   Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   Tensor b = (a + 1).relu().sum(1);           // nothing computed yet
//   std::vector<float> v = b.to_vector<float>();  // schedule, compile, run, read back
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tg/dtype.h"
#include "tg/error.h"
#include "tg/sint.h"

namespace tg {

using Shape = std::vector<int64_t>;

// the dtype of a C++ element type (float -> float32, int32_t -> int32, bool -> bool ...)
template <class T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return dtypes::bool_;
  else if constexpr (std::is_same_v<T, float>) return dtypes::float32;
  else if constexpr (std::is_same_v<T, double>) return dtypes::float64;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return sizeof(T) == 1 ? dtypes::int8 : sizeof(T) == 2 ? dtypes::int16 : sizeof(T) == 4 ? dtypes::int32 : dtypes::int64;
  else if constexpr (std::is_integral_v<T>)
    return sizeof(T) == 1 ? dtypes::uint8 : sizeof(T) == 2 ? dtypes::uint16 : sizeof(T) == 4 ? dtypes::uint32 : dtypes::uint64;
  else static_assert(sizeof(T) == 0, "no tinygrad dtype for this C++ type");
}

// reduce axes: none (all), one int, or several ({0, 2}); negative axes count from the end
struct Axis {
  std::optional<std::vector<int64_t>> axes;
  bool single = false;  // one int given (tinygrad treats `axis=1` and `axis=(1,)` alike except in squeeze)
  Axis() = default;
  Axis(std::nullopt_t) {}
  Axis(int a) : axes(std::vector<int64_t>{a}), single(true) {}
  Axis(int64_t a) : axes(std::vector<int64_t>{a}), single(true) {}
  Axis(std::vector<int64_t> a) : axes(std::move(a)) {}
  Axis(const std::vector<int>& a) : axes(std::vector<int64_t>(a.begin(), a.end())) {}
  Axis(std::initializer_list<int> a) : axes(std::vector<int64_t>(a.begin(), a.end())) {}
};

// one index of t[...]: an int (drops the dim), a slice, None (new axis of size 1), Ellipsis, or an advanced index: an
// int Tensor or int list (std::vector<int64_t>{...}) picking along the dim, a bool Tensor or bool list masking as many
// dims as it has (torch's boolean indexing, which tinygrad lacks: the count of trues is read back, one realize)
struct Slice {
  std::optional<int64_t> start, stop, step;
};
struct NewAxis {};
struct Ellipsis {};
class Tensor;
using Index = std::variant<int64_t, Slice, NewAxis, Ellipsis, Tensor, std::vector<int64_t>, std::vector<bool>>;

// an int or a list of ints, as tinygrad's conv/pool arguments take them (stride=2 or stride=(2, 1))
struct IntList {
  std::vector<int64_t> v;
  bool is_int = false;  // given as one int (applies to every dim), not as a list of one
  IntList(int x) : v{x}, is_int(true) {}
  IntList(int64_t x) : v{x}, is_int(true) {}
  IntList(std::initializer_list<int64_t> x) : v(x) {}
  IntList(std::vector<int64_t> x) : v(std::move(x)) {}
};

// what realize() would run, built but not run yet (tinygrad's Tensor.schedule_linear): the kernel and copy calls in
// order, with the values of the variables they are bound to. Building it already points the tensors at the buffers it
// fills, so run it before reading them.
class Schedule {
 public:
  size_t size() const;                     // calls: kernels and copies
  std::string str() const;                 // the LINEAR, printed as tinygrad prints it
  void run() const;                        // launch every call in order (kernels are compiled on first use)

 private:
  struct Impl;
  friend struct TensorAccess;
  std::shared_ptr<const Impl> impl_;
};

class Tensor {
 public:
  // ** construction **
  Tensor();  // tinygrad's Tensor(None): a 0-d weak 0.0
  // a 0-d tensor from a C++ scalar: a weak literal (weakint/weakfloat; bool is bool) unless a dtype is given. Like
  // tinygrad, a scalar tensor is a device-free constant: `device` is accepted for symmetry and ignored
  template <class T> requires std::is_arithmetic_v<T>
  Tensor(T v, std::optional<DType> dtype = std::nullopt, const std::string& device = "") : Tensor(scalar(to_const(v), dtype, device)) {}

  // a symbolic dim allocates its largest value and shrinks the buffer to the symbolic shape (tinygrad's empty)
  static Tensor empty(const SymShape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor full(const Shape& shape, ConstVal fill_value, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor zeros(const Shape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor ones(const Shape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  // device-free, as in tinygrad: they take the device of the tensors they are combined with (and CPU when read alone)
  static Tensor arange(ConstVal stop, std::optional<DType> dtype = std::nullopt);
  static Tensor arange(ConstVal start, ConstVal stop, ConstVal step = 1, std::optional<DType> dtype = std::nullopt);
  static Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, std::optional<DType> dtype = std::nullopt);
  Tensor full_like(ConstVal fill_value, std::optional<DType> dtype = std::nullopt) const;
  Tensor zeros_like(std::optional<DType> dtype = std::nullopt) const;
  Tensor ones_like(std::optional<DType> dtype = std::nullopt) const;
  Tensor empty_like(std::optional<DType> dtype = std::nullopt, const std::string& device = "") const;
  Tensor const_like(ConstVal v, std::optional<DType> dtype = std::nullopt) const;  // v in this shape, no storage (device-free)
  // steps values from start to stop, both included (default_float unless dtype; bool is not supported)
  static Tensor linspace(ConstVal start, ConstVal stop, int64_t steps, std::optional<DType> dtype = std::nullopt);
  // tinygrad's anonymous buffer (full of Invalid there): values that are never read; here the same as empty()
  static Tensor invalids(const Shape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  // a tensor over caller memory, not copied and not owned: ptr (host memory for CPU, a device pointer for CUDA) must
  // hold prod(shape) elements of dtype and stay valid while this tensor or any tensor still reading its buffer lives;
  // writes through assign go to that memory
  static Tensor from_blob(void* ptr, const Shape& shape, DType dtype = dtypes::default_float, const std::string& device = "");
  // random numbers from tinygrad's threefry counter generator (the same graph, the same bits)
  static void manual_seed(uint64_t seed = 0);
  static Tensor rand(const Shape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor randn(const Shape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor randint(const Shape& shape, int64_t low = 0, int64_t high = 10, DType dtype = dtypes::int32, const std::string& device = "");
  static Tensor uniform(const Shape& shape, double low = 0.0, double high = 1.0, std::optional<DType> dtype = std::nullopt,
                        const std::string& device = "");
  // layer initializers (nn_ops.cpp): uniform in +-prod(shape)^-0.5, +-sqrt(6/(fan_in+fan_out)), +-sqrt(6/(1+a^2)/fan_in)
  static Tensor scaled_uniform(const Shape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor glorot_uniform(const Shape& shape, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor kaiming_uniform(const Shape& shape, double a = 0.01, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  // normal(mean, std) by Box-Muller from rand; kaiming_normal: std sqrt(2/(1+a^2)/fan_in) (fan_in = prod(shape[1:]))
  static Tensor normal(const Shape& shape, double mean = 0.0, double std = 1.0, std::optional<DType> dtype = std::nullopt,
                       const std::string& device = "");
  static Tensor kaiming_normal(const Shape& shape, double a = 0.01, std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor randperm(int64_t n, DType dtype = dtypes::int32, const std::string& device = "");  // argsort of rand(n)
  // threefry bits: num uint32 values from a (2,) uint32 key and counter, as tinygrad's Tensor.random_bits
  static Tensor random_bits(const Tensor& key, const Tensor& counter, int64_t num);
  // num_samples int32 class indices per row of self's (1-D or 2-D) weights: by the cdf with replacement, else
  // Efraimidis-Spirakis keys (log2(u) / w) and topk
  Tensor multinomial(int64_t num_samples = 1, bool replacement = false) const;
  Tensor rand_like(std::optional<DType> dtype = std::nullopt) const;
  Tensor randn_like(std::optional<DType> dtype = std::nullopt) const;
  // host data, in row-major order: the BUFFER is created on the device and written now
  template <class T> static Tensor from_vector(const std::vector<T>& data, const Shape& shape, std::optional<DType> dtype = std::nullopt,
                                               const std::string& device = "") {
    std::vector<uint8_t> bytes(data.size() * sizeof(T));
    if constexpr (std::is_same_v<T, bool>) for (size_t i = 0; i < data.size(); i++) bytes[i] = data[i];
    else if (!data.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
    return from_bytes(bytes, dtype_of<T>(), shape, dtype, device);
  }
  template <class T> static Tensor from_vector(const std::vector<T>& data) { return from_vector(data, Shape{int64_t(data.size())}); }
  // raw row-major bytes of src_dtype; a different `dtype` is a cast on the device
  static Tensor from_bytes(const std::vector<uint8_t>& bytes, DType src_dtype, const Shape& shape, std::optional<DType> dtype = std::nullopt,
                           const std::string& device = "");

  // ** properties **
  const Shape& shape() const;  // tg::Error naming the dims where one is symbolic: read those with sym_shape()
  SymShape sym_shape() const;  // tinygrad's shape: ints, or sints of bound Variables
  DType dtype() const;
  std::optional<std::string> device() const;  // nullopt for a device-free constant graph; "(CPU, CPU:1)" for a multi-device one
  std::vector<std::string> devices() const;    // the devices of a multi-device tensor, else {device()} ({} when device-free)
  std::optional<int64_t> shard_axis() const;   // the axis a multi-device tensor is split along (nullopt: replicated, one device)
  int64_t ndim() const;
  int64_t numel() const;
  int64_t element_size() const;
  int64_t nbytes() const { return numel() * element_size(); }
  Shape max_shape() const;  // the shape with every symbolic dim at its maximum
  int64_t max_numel() const;
  bool is_floating_point() const { return dtype().is_float(); }
  std::string graph() const;  // the UOp graph, printed as tinygrad prints t.uop

  // ** realization and data **
  // compute now; every live tensor that refers to what was computed now refers to its buffer (buffer-backed and
  // device-free tensors have nothing to compute)
  Tensor& realize();
  static void realize(const std::vector<Tensor>& tensors);  // one schedule for all of them
  static Schedule schedule_linear(const std::vector<Tensor>& tensors);  // realize's schedule, not run yet
  // the schedule and the values of the variables it is bound to (schedule_linear refuses bound variables)
  static std::pair<Schedule, std::map<std::string, int64_t>> linear_with_vars(const std::vector<Tensor>& tensors);
  std::vector<uint8_t> data() const;  // raw bytes in dtype() (a weak dtype reads as its strong dtype)
  // the values as T (cast on the device first when dtype() differs), realizing as needed
  template <class T> std::vector<T> to_vector() const {
    std::vector<uint8_t> b = (dtype() == dtype_of<T>() ? *this : cast(dtype_of<T>())).data();
    std::vector<T> out(b.size() / sizeof(T));
    if constexpr (std::is_same_v<T, bool>) for (size_t i = 0; i < out.size(); i++) out[i] = b[i] != 0;
    else if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
    return out;
  }
  template <class T> T item() const {
    if (numel() != 1) throw Error("item: the tensor must have one element, got shape " + shape_str());
    return to_vector<T>()[0];
  }
  Tensor contiguous() const;
  Tensor to(const std::string& device) const;
  Tensor& to_(const std::string& device);  // moves this tensor (and its grad) to device in place
  // to(device) without a copy where that can be: a DISK tensor that reads one contiguous byte range of its file, to a
  // CPU device, is a CPU buffer over the file's pages where they lie (a private mapping: the page cache's pages, read
  // when kernels touch them and counted once in RSS; one written to becomes this process's own). It shows later writes
  // to the file's untouched pages, and a kernel reading it after the file was truncated dies of SIGBUS, as with any
  // mapping. Another source or device, or a range not 16-byte aligned: to(device). A DISK view that is not one range: an Error
  Tensor to_mapped(const std::string& device) const;
  Tensor clone(const std::string& device = "") const;
  // multi-device (tinygrad's shard): a copy on every device, whole (axis nullopt: replicated) or split in equal slices
  // along axis. Ops on it run on each device; a reduction over the split axis all-reduces; to(one device) gathers
  Tensor shard(const std::vector<std::string>& devices, std::optional<int64_t> axis = std::nullopt) const;
  Tensor& shard_(const std::vector<std::string>& devices, std::optional<int64_t> axis = std::nullopt);
  Tensor shard_like(const Tensor& y) const;  // sharded as y is (its devices and axis); to(y.device()) for a one-device y
  Tensor to(const std::vector<std::string>& devices) const;  // replicated on every device (gathered first if split)
  Tensor to(std::initializer_list<std::string> devices) const { return to(std::vector<std::string>(devices)); }  // to({"CPU", "CPU:1"})
  Tensor detach() const;
  Tensor& assign(const Tensor& x);  // tinygrad's assign: STORE+AFTER into this tensor's buffer
  template <class T> requires std::is_arithmetic_v<T> Tensor& assign(T v) { return assign(Tensor(v, dtype())); }
  Tensor& replace(const Tensor& x);
  // in-place operators, as tinygrad's __iadd__...: assign(op(x)) into this tensor (the result must keep its dtype)
  Tensor& operator+=(const Tensor& x) { return assign(add(x)); }
  Tensor& operator-=(const Tensor& x) { return assign(sub(x)); }
  Tensor& operator*=(const Tensor& x) { return assign(mul(x)); }
  Tensor& operator/=(const Tensor& x) { return assign(div(x)); }
  Tensor& operator&=(const Tensor& x) { return assign(bitwise_and(x)); }
  Tensor& operator|=(const Tensor& x) { return assign(bitwise_or(x)); }
  Tensor& operator^=(const Tensor& x) { return assign(bitwise_xor(x)); }
  Tensor& operator<<=(const Tensor& x) { return assign(lshift(x)); }
  Tensor& operator>>=(const Tensor& x) { return assign(rshift(x)); }
  // tinygrad's __ifloordiv__, __ipow__, __imatmul__ (C++ has no //=, **=, @=): the named op with a trailing underscore
  Tensor& idiv_(const Tensor& x) { return assign(idiv(x)); }
  Tensor& pow_(const Tensor& x) { return assign(pow(x)); }
  Tensor& matmul_(const Tensor& x) { return assign(matmul(x)); }

  // ** elementwise (broadcasting, tinygrad's dtype promotion; a C++ number is a weak literal) **
  Tensor add(const Tensor& x, bool reverse = false) const;
  Tensor sub(const Tensor& x, bool reverse = false) const;
  Tensor mul(const Tensor& x, bool reverse = false) const;
  Tensor div(const Tensor& x, bool reverse = false) const;  // true division: ints become default_float
  Tensor div(const Tensor& x, const std::string& rounding_mode, bool reverse = false) const;  // "trunc" or "floor"
  Tensor div(const Tensor& x, const char* rounding_mode, bool reverse = false) const { return div(x, std::string(rounding_mode), reverse); }
  Tensor idiv(const Tensor& x, bool reverse = false) const;  // Python's //: div(x, "floor")
  Tensor mod(const Tensor& x, bool reverse = false) const;
  Tensor fmod(const Tensor& x) const;  // C's remainder: the sign follows self (mod's follows x)
  Tensor pow(const Tensor& x, bool reverse = false) const;
  template <class T> requires std::is_arithmetic_v<T> Tensor pow(T x) const {
    if (!least_upper_dtype({dtype(), Tensor(x).dtype()}).is_float() && !(std::is_integral_v<T> && x >= 0))
      throw Error("pow: base needs to be float, got " + std::string(dtype().name()) + " with exponent " + std::to_string(x));
    return pow(Tensor(x));
  }
  Tensor maximum(const Tensor& x) const;
  Tensor minimum(const Tensor& x) const;
  Tensor where(const Tensor& x, const Tensor& y) const;  // self is the condition
  Tensor copysign(const Tensor& other) const;             // |self| with the sign of other (-0.0 counts as negative)
  Tensor logaddexp(const Tensor& other) const;            // log(exp(self) + exp(other)), computed stably
  Tensor lerp(const Tensor& end, const Tensor& weight) const;  // self + (end - self) * weight; uint8 in 7-bit fixed point
  Tensor lerp(const Tensor& end, double weight) const;
  Tensor lt(const Tensor& x) const;
  Tensor gt(const Tensor& x) const;
  Tensor le(const Tensor& x) const;
  Tensor ge(const Tensor& x) const;
  Tensor eq(const Tensor& x) const;
  Tensor ne(const Tensor& x) const;
  Tensor bitwise_and(const Tensor& x, bool reverse = false) const;
  Tensor bitwise_or(const Tensor& x, bool reverse = false) const;
  Tensor bitwise_xor(const Tensor& x, bool reverse = false) const;
  Tensor lshift(const Tensor& x, bool reverse = false) const;
  Tensor rshift(const Tensor& x, bool reverse = false) const;
  Tensor bitwise_not() const;
  Tensor logical_not() const;
  Tensor neg() const;
  Tensor reciprocal() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor log10() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  // polynomial approximations as tinygrad's (Abramowitz & Stegun 4.4.46 for asin, 7.1.26 for erf): |error| < 2e-7
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor erf() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor atanh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor trunc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor gelu(const std::string& approximate = "tanh") const;  // "tanh" (tinygrad's default) or "none" (x * Phi(x) through erf)
  Tensor silu() const;
  Tensor square() const;
  Tensor clamp(std::optional<Tensor> min_ = std::nullopt, std::optional<Tensor> max_ = std::nullopt) const;
  Tensor clip(std::optional<Tensor> min_ = std::nullopt, std::optional<Tensor> max_ = std::nullopt) const { return clamp(min_, max_); }
  // float classification (bool results); isclose: |self - other| <= atol + rtol * |other|, infinities equal to themselves
  Tensor isnan() const;
  Tensor isinf(bool detect_positive = true, bool detect_negative = true) const;
  Tensor isfinite() const;
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  // isclose(...).all(), read back to the host (tinygrad returns the 0-d bool tensor; torch a bool, as here)
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor cast(DType dtype) const;
  Tensor bitcast(DType dtype) const;
  // Keccak over the last dim: "sha3_224", "sha3_256", "shake_128" (16 bytes out), or a (rate, dsbyte) pair; the leading
  // dims are a batch. hash(): tinygrad's 16-byte tree hash (shake_128 of 4 KiB pieces, then of their digests, per 1 MiB)
  Tensor keccak(const std::string& cfg = "sha3_256") const;
  Tensor keccak(int64_t rate, int64_t dsbyte) const;
  Tensor hash() const;
  Tensor float_() const { return cast(dtypes::float32); }
  Tensor half() const { return cast(dtypes::float16); }
  Tensor int_() const { return cast(dtypes::int32); }
  Tensor bool_() const { return cast(dtypes::bool_); }
  Tensor bfloat16() const { return cast(dtypes::bfloat16); }
  Tensor double_() const { return cast(dtypes::float64); }
  Tensor long_() const { return cast(dtypes::int64); }
  Tensor short_() const { return cast(dtypes::int16); }

  // ** reduce **
  Tensor sum(Axis axis = {}, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(Axis axis = {}, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max(Axis axis = {}, bool keepdim = false) const;
  Tensor min(Axis axis = {}, bool keepdim = false) const;
  Tensor mean(Axis axis = {}, bool keepdim = false) const;
  Tensor var(Axis axis = {}, bool keepdim = false, int64_t correction = 1) const;
  Tensor std(Axis axis = {}, bool keepdim = false, int64_t correction = 1) const;
  std::pair<Tensor, Tensor> var_mean(Axis axis = {}, bool keepdim = false, int64_t correction = 1) const;  // (var, mean)
  std::pair<Tensor, Tensor> std_mean(Axis axis = {}, bool keepdim = false, int64_t correction = 1) const;  // (std, mean)
  Tensor any(Axis axis = {}, bool keepdim = false) const;
  Tensor all(Axis axis = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor softmax(int64_t axis = -1, std::optional<DType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t axis = -1, std::optional<DType> dtype = std::nullopt) const;
  Tensor softmin(int64_t axis = -1, std::optional<DType> dtype = std::nullopt) const;  // softmax of -self
  Tensor logsumexp(Axis axis = {}, bool keepdim = false) const;
  Tensor cumsum(int64_t axis = 0) const;
  Tensor cumprod(int64_t axis) const;
  // running max/min and the index of the element it came from (int32; on ties the first one, where torch takes the last)
  std::pair<Tensor, Tensor> cummax(int64_t axis = 0) const;
  std::pair<Tensor, Tensor> cummin(int64_t axis = 0) const;
  Tensor logcumsumexp(int64_t axis = 0) const;

  // ** movement **
  // movement ops take sints (ints or symbolic ones) where tinygrad does
  Tensor reshape(const SymShape& shape) const;  // one -1 is inferred
  Tensor expand(const SymShape& shape) const;   // -1 keeps a dim
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor pad(const SymPairs& padding, ConstVal value = 0.0) const;  // (before, after); negative crops
  // mode "constant" (fill with value), "reflect" (mirror without the edge), "replicate" (repeat the edge) or "circular" (wrap)
  Tensor pad(const SymPairs& padding, const std::string& mode, ConstVal value = 0.0) const;
  Tensor pad(const SymPairs& padding, const char* mode, ConstVal value = 0.0) const {
    return pad(padding, std::string(mode), value);
  }
  // torch's flat list: (last dim before, last dim after, second-to-last before, ...); dims not named are not padded.
  // A braced list of pairs, {{1, 1}}, is the pair form
  Tensor pad(std::initializer_list<int64_t> flat, const std::string& mode = "constant", ConstVal value = 0.0) const {
    return pad_flat(std::vector<int64_t>(flat), mode, value);
  }
  template <class V> requires std::is_same_v<V, std::vector<int64_t>>
  Tensor pad(const V& flat, const std::string& mode = "constant", ConstVal value = 0.0) const { return pad_flat(flat, mode, value); }
  Tensor view(const SymShape& shape) const { return reshape(shape); }
  // einops' rearrange: "b c (h w) -> b (c h) w" with sizes {{"h", 2}} for axes a group splits; "..." and 1 (a unit
  // axis) as einops has them
  Tensor rearrange(const std::string& formula, const std::vector<std::pair<std::string, int64_t>>& sizes = {}) const;
  const Shape& size() const { return shape(); }
  int64_t size(int64_t dim) const;
  // pieces along dim: of `sizes` each (the last one smaller) for an int, of the listed sizes (summing to the dim) for a list
  std::vector<Tensor> split(IntList sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;  // split into pieces of ceil(n / chunks): maybe fewer
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;  // no dim: of the flattened tensor
  Tensor roll(IntList shifts, std::optional<IntList> dims = std::nullopt) const;                // no dims: of the flattened tensor
  Tensor diag() const;  // a 1-D tensor as the diagonal of a square matrix
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;  // dim1, dim2 removed, the diagonal last
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;  // dim becomes (windows, size): windows of size every step
  // coordinate grids of 0-d or 1-D tensors: "ij" (matrix) or "xy" (Cartesian: the first two dims swapped)
  static std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");
  Tensor shrink(const SymPairs& start_end) const;
  Tensor flip(Axis axis) const;
  Tensor transpose(int64_t dim0 = 1, int64_t dim1 = 0) const;
  Tensor T() const { return transpose(); }
  Tensor squeeze(std::optional<int64_t> dim = std::nullopt) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, const Shape& sizes) const;
  Tensor repeat(const std::vector<int64_t>& repeats) const;
  // tinygrad's a.cat(b, c, dim=d) is Tensor::cat({a, b, c}, d) (at least one tensor); a.cat(b, d) joins two. The list
  // form is static: called through a tensor, a.cat({b, c}) joins b and c only, as any C++ static member would
  static Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
  static Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
  Tensor cat(const Tensor& other, int64_t dim = 0) const;
  Tensor stack(const Tensor& other, int64_t dim = 0) const;
  Tensor shrink_to(const Shape& shape) const;
  Tensor pad_to(const Shape& shape) const;
  // t[i], t[{Slice{0, 2}, 1, NewAxis{}, Ellipsis{}}]: basic indexing as Python's (negative indices, steps);
  // t[idx], t[{Slice{}, idx, std::vector<int64_t>{0, 2}}]: advanced indexing as tinygrad's getitem (numpy's rules: the
  // broadcast index dims go where the first index was, or in front when slices separate the indices). Tensor index
  // values out of range select 0 (they are known only when the graph runs); list values out of range are an error
  Tensor operator[](int64_t i) const;
  Tensor operator[](const std::vector<Index>& indices) const;
  Tensor operator[](const Tensor& index) const { return (*this)[std::vector<Index>{index}]; }
  // tinygrad's t[indices] = v: v (broadcast, cast if a weak literal, else of this dtype) written where the indices
  // point; on repeated advanced indices the last write wins. An unrealized float tensor gets the new graph; a realized
  // one is assigned in place, so its views see the write. An error if another live tensor (not a view of the same
  // buffer, not v) is computed from this one: its value would diverge from eager semantics
  Tensor& setitem(const std::vector<Index>& indices, const Tensor& v);
  template <class T> requires std::is_arithmetic_v<T>
  Tensor& setitem(const std::vector<Index>& indices, T v) { return setitem(indices, Tensor(v)); }
  Tensor slice(const std::vector<Slice>& slices) const { return (*this)[std::vector<Index>(slices.begin(), slices.end())]; }

  // ** selection, scatter, sort (select.cpp) **
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;  // value where mask is true (broadcasting), else self
  // self with src[i][j] written at [index[i][j]][j] (dim 0; likewise for other dims); on repeated indices the last wins.
  // reduce "add" / "multiply" combines a scalar src with self instead. Index values out of range are dropped, as
  // tinygrad does (they are only known when the graph runs)
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  template <class T> requires std::is_arithmetic_v<T>
  Tensor scatter(int64_t dim, const Tensor& index, T value, const std::string& reduce = "") const {
    return scatter_value(dim, index, to_const(value), reduce);
  }
  // "sum", "prod", "mean", "amax" or "amin" of src's values at each index (and self's value unless include_self is false)
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce, bool include_self = true) const;
  // the elements where mask (bool, broadcast to self) is true, flattened. Without size the count is read back to the host
  // (one realize); with size the result has size elements, cut or filled with fill_value
  Tensor masked_select(const Tensor& mask, std::optional<int64_t> size = std::nullopt, ConstVal fill_value = 0) const;
  Tensor nonzero(std::optional<int64_t> size = std::nullopt, ConstVal fill_value = 0) const;  // (count, ndim) int32 indices
  // bitonic sort (tinygrad's): values and their int32 indices; equal elements keep their order (stable)
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const { return sort(dim, descending).second; }
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;  // sorted=false is not supported

  // ** linear algebra **
  Tensor dot(const Tensor& w, std::optional<DType> dtype = std::nullopt) const;
  // Einstein summation: "ij,jk->ik"; without "->" the output is the letters used once, sorted; "..." broadcasts; a
  // letter repeated in one operand takes its diagonal; dtype is the sum's
  static Tensor einsum(const std::string& formula, const std::vector<Tensor>& operands, std::optional<DType> dtype = std::nullopt);
  // the upper / lower triangle of the last two dims (0 elsewhere); diagonal > 0 moves the border up-right
  Tensor triu(const sint& diagonal = 0) const;  // diagonal and the matrix dims may be symbolic
  Tensor tril(const sint& diagonal = 0) const;
  Tensor matmul(const Tensor& x, bool reverse = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor linear(const Tensor& weight, std::optional<Tensor> bias = std::nullopt, std::optional<DType> dtype = std::nullopt) const;
  Tensor layernorm(Axis axis = -1, double eps = 1e-5) const;
  // tinygrad's Newton-Schulz iteration of an odd polynomial (linalg.cpp): G = x / (|x|_F + eps) over the last two dims,
  // then `steps` times G = sum_i params[i] * (G G^T)^i G; a tall matrix is transposed first and back after. Muon uses it
  Tensor newton_schulz(int64_t steps, const std::vector<double>& params, double eps = 1e-7) const;
  // tinygrad's QR by Householder reflections over the last two dims (m, n): Q (m, m) orthogonal, R (m, n) upper
  // triangular, Q R = self
  std::pair<Tensor, Tensor> qr() const;
  // tinygrad's SVD (QR, then one-sided Jacobi rotations, 4 * min(m, n) rounds of round-robin pairs): U, S (descending),
  // Vh with U diag(S) Vh = self; U is (m, m), or (m, min(m, n)) without full_matrices
  std::tuple<Tensor, Tensor, Tensor> svd(bool full_matrices = true) const;

  // ** autograd (gradient.cpp): gradients are lazy UOp graphs built by one rule per op (tinygrad's gradient.py) **
  // fills grad() of every live floating-point tensor with a device that this tensor depends on; a non-scalar needs
  // `gradient` (the seed, shaped like this tensor)
  Tensor& backward(std::optional<Tensor> gradient = std::nullopt);
  // d(this)/d(target) for each target, without touching grad()
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets, std::optional<Tensor> gradient = std::nullopt) const;
  std::optional<Tensor> grad() const;
  Tensor& set_grad(std::optional<Tensor> g);  // nullopt clears it (Optimizer::zero_grad)
  bool is_param() const;                       // true unless marked a buffer (BatchNorm's running statistics)
  Tensor& is_param_(bool is_param = true);
  Tensor contiguous_backward() const;  // identity forward; the gradient flowing back is made contiguous

  // ** functions (tinygrad's Tensor.as_param / Tensor.call): a graph built on placeholders, applied to arguments **
  // the placeholder for argument `slot` of a function body: this tensor's shape, dtype and device, none of its values
  Tensor as_param(int64_t slot) const;
  // a function's own gradient: the output's gradient and the arguments -> one gradient per argument (nullopt: none)
  using CallGradFxn = std::function<std::vector<std::optional<Tensor>>(const Tensor& grad, const std::vector<Tensor>& args)>;
  // fxn (built on as_param(0), as_param(1), ...) applied to (this, rest...): a FUNCTION in the graph, inlined when
  // scheduled. Without grad_fxn the gradient flows through fxn's graph. The arguments must match the placeholders.
  Tensor call(const std::vector<Tensor>& rest, const Tensor& fxn, CallGradFxn grad_fxn = {}) const;

  // ** nn functionals (nn_ops.cpp), tinygrad's Tensor methods; NCHW layouts, weights as tinygrad/PyTorch lay them out **
  Tensor conv2d(const Tensor& weight, std::optional<Tensor> bias = std::nullopt, int64_t groups = 1, IntList stride = 1,
                IntList dilation = 1, IntList padding = 0, std::optional<DType> dtype = std::nullopt) const;
  Tensor conv_transpose2d(const Tensor& weight, std::optional<Tensor> bias = std::nullopt, int64_t groups = 1, IntList stride = 1,
                          IntList dilation = 1, IntList padding = 0, IntList output_padding = 0) const;
  Tensor max_pool2d(IntList kernel_size = {2, 2}, std::optional<IntList> stride = std::nullopt, IntList dilation = 1, IntList padding = 0,
                    bool ceil_mode = false) const;
  // max_pool2d(return_indices=True): the values and the flat spatial index of each maximum
  std::pair<Tensor, Tensor> max_pool2d_with_indices(IntList kernel_size = {2, 2}, std::optional<IntList> stride = std::nullopt,
                                                    IntList dilation = 1, IntList padding = 0, bool ceil_mode = false) const;
  // max_pool2d's partial inverse: each value placed at its flat spatial index (max_pool2d_with_indices'), 0 elsewhere;
  // the output's spatial size from the pooling arguments unless output_size (whose last dims are used) is given
  Tensor max_unpool2d(const Tensor& indices, IntList kernel_size = {2, 2}, std::optional<IntList> stride = std::nullopt, IntList dilation = 1,
                      IntList padding = 0, std::optional<Shape> output_size = std::nullopt) const;
  // resize the last size.size() dims: "linear" (bilinear, trilinear over 2, 3 dims; align_corners as torch's),
  // "nearest" (torch's floor of scale * i) or "nearest-exact" (of scale * (i + 0.5)); the result keeps the dtype
  Tensor interpolate(const Shape& size, const std::string& mode = "linear", bool align_corners = false) const;
  Tensor avg_pool2d(IntList kernel_size = {2, 2}, std::optional<IntList> stride = std::nullopt, IntList dilation = 1, IntList padding = 0,
                    bool ceil_mode = false, bool count_include_pad = true) const;
  Tensor dropout(double p = 0.5) const;  // identity unless tg::training()
  Tensor one_hot(int64_t num_classes) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor batchnorm(std::optional<Tensor> weight, std::optional<Tensor> bias, const Tensor& mean, const Tensor& invstd, Axis axis = 1) const;
  Tensor sequential(const std::vector<std::function<Tensor(const Tensor&)>>& layers) const;
  Tensor sparse_categorical_crossentropy(const Tensor& Y, int64_t ignore_index = -1, double label_smoothing = 0.0,
                                         const std::string& reduction = "mean") const;
  Tensor cross_entropy(const Tensor& Y, const std::string& reduction = "mean", double label_smoothing = 0.0) const;
  Tensor binary_crossentropy(const Tensor& Y, const std::string& reduction = "mean") const;
  Tensor binary_crossentropy_logits(const Tensor& Y, const std::string& reduction = "mean",
                                    std::optional<Tensor> pos_weight = std::nullopt) const;
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value, std::optional<Tensor> attn_mask = std::nullopt,
                                      double dropout_p = 0.0, bool is_causal = false, bool enable_gqa = false) const;
  Tensor leaky_relu(double neg_slope = 0.01) const;
  Tensor elu(double alpha = 1.0) const;
  Tensor softplus(double beta = 1.0) const;
  Tensor logsigmoid() const;
  Tensor hardtanh(double min_val = -1, double max_val = 1) const;
  Tensor hardswish() const;
  Tensor hardsigmoid(double alpha = 1.0 / 6, double beta = 0.5) const;
  Tensor mish() const;
  Tensor relu6() const;
  Tensor celu(double alpha = 1.0) const;
  Tensor selu(double alpha = 1.67326, double gamma = 1.0507) const;  // tinygrad's rounded constants
  Tensor quick_gelu() const;                                          // x * sigmoid(1.702 x)
  Tensor softsign() const;                                            // x / (1 + |x|)
  Tensor swish() const { return silu(); }
  Tensor rms_norm(Axis axis = -1, double eps = 1e-6) const;
  // Lp normalization along dim: self / max(|self|_p, eps) (p = 0 counts the nonzeros)
  Tensor normalize(double p = 2.0, int64_t dim = 1, double eps = 1e-12) const;
  // negative log likelihood of log-probabilities self (N, C) at class indices Y (N,): optional per-class weight, entries
  // where Y == ignore_index left out (the mean divides by the weight of the entries kept)
  Tensor nll_loss(const Tensor& Y, std::optional<Tensor> weight = std::nullopt, std::optional<int64_t> ignore_index = std::nullopt,
                  const std::string& reduction = "mean") const;

  bool is(const Tensor& other) const { return impl_ == other.impl_; }  // the same tensor, not just an equal one (Python's `is`)
  std::string shape_str() const;

 private:
  struct Impl;                 // the graph behind the handle (src/tensor/tensor_impl.h)
  friend struct TensorAccess;  // how the library itself reaches it
  explicit Tensor(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
  static Tensor scalar(ConstVal v, std::optional<DType> dtype, const std::string& device);
  Tensor pad_flat(const std::vector<int64_t>& flat, const std::string& mode, ConstVal value) const;
  Tensor scatter_value(int64_t dim, const Tensor& index, ConstVal value, const std::string& reduce) const;
  template <class T> static ConstVal to_const(T v) {
    if constexpr (std::is_same_v<T, bool>) return ConstVal(v);
    else if constexpr (std::is_floating_point_v<T>) return ConstVal(double(v));
    else return ConstVal(int64_t(v));
  }
};

// operators: a C++ number on either side is a weak literal; == and != build comparisons, as in tinygrad
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);  // true division
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator~(const Tensor& a);
std::ostream& operator<<(std::ostream& os, const Tensor& t);  // <Tensor CPU (2, 3) float>; never computes anything

}  // namespace tg
