// Chat templates: llama.cpp's built-in llama2, llama3 and chatml formats, picked from the GGUF's
// tokenizer.chat_template (by the markers it contains, as llama.cpp's detection does) or from the model family.
#include "tg/error.h"
#include "tg/llm.h"

namespace tg::llm {

std::string chat_template_name(const gguf::GGUF& g) {
  if (auto it = g.kv.find("tokenizer.chat_template"); it != g.kv.end() && it->second.type() == gguf::ValueType::STRING) {
    const std::string& t = it->second.str();
    if (t.find("<|im_start|>") != std::string::npos) return "chatml";
    if (t.find("<|start_header_id|>") != std::string::npos) return "llama3";
    if (t.find("[INST]") != std::string::npos) return "llama2";
  }
  auto arch = g.kv.find("general.architecture");
  if (arch == g.kv.end() || arch->second.type() != gguf::ValueType::STRING || arch->second.str() != "llama") return "chatml";
  auto model = g.kv.find("tokenizer.ggml.model");
  if (model != g.kv.end() && model->second.type() == gguf::ValueType::STRING && model->second.str() == "llama") return "llama2";
  if (auto toks = g.kv.find("tokenizer.ggml.tokens"); toks != g.kv.end() && toks->second.type() == gguf::ValueType::ARRAY)
    for (auto& v : toks->second.arr().items)
      if (v.type() == gguf::ValueType::STRING && v.str() == "<|start_header_id|>") return "llama3";
  return "chatml";
}

std::string apply_chat_template(const std::string& name, const std::vector<Message>& messages, bool add_generation_prompt) {
  for (auto& m : messages)
    if (m.role != "system" && m.role != "user" && m.role != "assistant")
      throw Error("chat template: unknown role '" + m.role + "' (system, user, assistant)");
  std::string out;
  if (name == "chatml") {
    for (auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
  } else if (name == "llama3") {
    for (auto& m : messages) out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  } else if (name == "llama2") {
    // [INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant</s><s>[INST] user [/INST]
    std::string sys;
    for (auto& m : messages) {
      if (m.role == "system") sys = m.content;
      else if (m.role == "user") {
        out += (out.empty() ? "" : "<s>") + std::string("[INST] ") + (sys.empty() ? "" : "<<SYS>>\n" + sys + "\n<</SYS>>\n\n") + m.content + " [/INST]";
        sys.clear();
      } else out += " " + m.content + "</s>";
    }
  } else throw Error("chat template: unknown template '" + name + "' (llama2, llama3, chatml)");
  return out;
}

}  // namespace tg::llm
