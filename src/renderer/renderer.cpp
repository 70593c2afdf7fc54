#include "renderer/renderer.h"

#include <typeinfo>

namespace tg {

std::string Renderer::identity() const {
  std::string s = std::string(typeid(*this).name()) + "|" + device + "|" + char('0' + has_local) + char('0' + has_threads) + char('0' + has_shared);
  for (auto* m : {&global_max, &local_max})
    for (int64_t v : *m) s += "," + std::to_string(v);
  s += "|" + std::to_string(shared_max) + "|" + std::to_string(vector_width);
  for (const TensorCore& tc : tensor_cores) s += "|" + tc.str();
  return s;
}

}  // namespace tg
