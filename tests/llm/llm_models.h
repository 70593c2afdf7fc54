#pragma once
// tests/llm's model files: llm_oracle.py's tiny random models (llama, gqa, qwen2, qwen3, quant), written once per run
#include <string>

#include "support/generated.h"

namespace tg::test {

struct LlmModels : GeneratedFiles {
  LlmModels() : GeneratedFiles("tg_llm", shell_quote(TG_PYTHON) + " " + shell_quote(TG_LLM_ORACLE) + " write", "setup.sh makes the venv with gguf and numpy") {}
  std::string model(const std::string& name) const { return path(name + ".gguf"); }
};
inline const LlmModels& llm_models() {
  static LlmModels m;
  return m;
}

}  // namespace tg::test
