// Chat templates: llama.cpp's built-in llama2, llama3, chatml, deepseek2 and deepseek3 formats, picked from the GGUF's
// tokenizer.chat_template (by the markers it contains, as llama.cpp's detection does) or from the model family.
#include "tg/error.h"
#include "tg/llm.h"

namespace tg::llm {

namespace {
// deepseek's markers: fullwidth bars (U+FF5C) and U+2581 for the spaces
const std::string DS_USER = "<\uFF5CUser\uFF5C>", DS_ASSISTANT = "<\uFF5CAssistant\uFF5C>", DS_EOS = "<\uFF5Cend\u2581of\u2581sentence\uFF5C>";
}  // namespace

std::string chat_template_name(const gguf::GGUF& g) {
  if (auto it = g.kv.find("tokenizer.chat_template"); it != g.kv.end() && it->second.type() == gguf::ValueType::STRING) {
    const std::string& t = it->second.str();
    if (t.find("<|im_start|>") != std::string::npos) return "chatml";
    if (t.find("<|start_header_id|>") != std::string::npos) return "llama3";
    if (t.find("[INST]") != std::string::npos) return "llama2";
    if (t.find("'Assistant: ' + message['content'] + eos_token") != std::string::npos) return "deepseek2";
    if (t.find(DS_ASSISTANT) != std::string::npos && t.find(DS_USER) != std::string::npos && t.find(DS_EOS) != std::string::npos) return "deepseek3";
  }
  auto has_token = [&](const std::string& s) {
    if (auto toks = g.kv.find("tokenizer.ggml.tokens"); toks != g.kv.end() && toks->second.type() == gguf::ValueType::ARRAY)
      for (auto& v : toks->second.arr().items)
        if (v.type() == gguf::ValueType::STRING && v.str() == s) return true;
    return false;
  };
  auto arch = g.kv.find("general.architecture");
  if (arch != g.kv.end() && arch->second.type() == gguf::ValueType::STRING && arch->second.str() == "deepseek2")
    return has_token(DS_ASSISTANT) ? "deepseek3" : "deepseek2";
  if (arch == g.kv.end() || arch->second.type() != gguf::ValueType::STRING || arch->second.str() != "llama") return "chatml";
  auto model = g.kv.find("tokenizer.ggml.model");
  if (model != g.kv.end() && model->second.type() == gguf::ValueType::STRING && model->second.str() == "llama") return "llama2";
  return has_token("<|start_header_id|>") ? "llama3" : "chatml";
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
  } else if (name == "deepseek2" || name == "deepseek3") {
    bool v3 = name == "deepseek3";
    for (auto& m : messages) {
      if (m.role == "system") out += m.content + "\n\n";
      else if (m.role == "user") out += v3 ? DS_USER + m.content : "User: " + m.content + "\n\n";
      else out += (v3 ? DS_ASSISTANT : std::string("Assistant: ")) + m.content + DS_EOS;
    }
    if (add_generation_prompt) out += v3 ? DS_ASSISTANT : "Assistant:";
  } else throw Error("chat template: unknown template '" + name + "' (llama2, llama3, chatml, deepseek2, deepseek3)");
  return out;
}

}  // namespace tg::llm
