#!/usr/bin/env python3
# The oracle of tests/llm/test_model.cpp: tiny random llama-family GGUF models written with gguf-py's GGUFWriter, and an
# independent float64 numpy forward over them that reads the files back with gguf-py's GGUFReader (quantized weights
# through gguf.quants.dequantize), written from llama.cpp's definitions of each architecture.
#   llm_oracle.py write OUTDIR           -> OUTDIR/{llama,gqa,qwen2,qwen3,quant,wide,grid,kquant}.gguf
#   llm_oracle.py bench PATH             -> PATH: the decode benchmark's model (d256, 4 layers, Q8_0 weights; docs/benchmarks.md)
#   llm_oracle.py forward MODEL 1,5,17 N -> JSON {"logprobs": [[...] per position], "greedy": [N tokens after the prompt]}
#   llm_oracle.py forward MODEL 1,5,17 N qdot: the same with Q8_0 / Q4_K linears fed int8-quantized activations (ggml-cpu)
#   (qdot:Q4_K: only the Q4_K linears)
import json, sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

# ** 1. models **

def bytes_to_unicode():  # GPT-2's printable stand-ins for the 256 bytes
  bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + list(range(ord("\u00ae"), ord("\u00ff") + 1))
  cs, n = bs[:], 0
  for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
  return dict(zip(bs, map(chr, cs)))

def spm_vocab():  # SentencePiece (llama 2): <unk> <s> </s>, the 256 byte tokens, a few scored pieces
  pieces = ["\u2581", "\u2581t", "he", "\u2581the", "in", "er", "an", "\u2581a", "on", "re", "\u2581w", "at", "ou", "it", "is"] + list("abcdefghijklmnopqrstuvwxyz")
  tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
  types = [2, 3, 3] + [6] * 256 + [1] * len(pieces)
  scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
  return dict(model="llama", tokens=tokens, types=types, scores=scores, merges=None, bos=1, eos=2)

def bpe_vocab(pre, specials):  # byte-level BPE: the 256 byte characters, merges, special tokens at the end
  b2u = bytes_to_unicode()
  tokens = [b2u[b] for b in range(256)]
  merges = ["\u0120 t", "h e", "\u0120t he", "i n", "e r", "a n", "\u0120 a", "o n", "r e", "\u0120 w", "a t", "o u"]
  for m in merges: tokens.append(m.replace(" ", ""))
  tokens += specials
  types = [1] * (len(tokens) - len(specials)) + [3] * len(specials)
  return dict(model="gpt2", pre=pre, tokens=tokens, types=types, scores=None, merges=merges, bos=len(tokens) - len(specials), eos=len(tokens) - len(specials) + 1)

MODELS = {  # name: arch, sizes, tokenizer, options
  "llama": dict(arch="llama", dim=64, ffn=128, layers=2, heads=4, kv=4, vocab=spm_vocab()),
  "gqa": dict(arch="llama", dim=64, ffn=96, layers=2, heads=4, kv=2, rope_scale=2.0, theta=500000.0, tied=True,
              vocab=bpe_vocab("llama3", ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"])),
  "qwen2": dict(arch="qwen2", dim=64, ffn=128, layers=2, heads=4, kv=1, bias=True, theta=1000000.0,
                vocab=bpe_vocab("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])),
  "qwen3": dict(arch="qwen3", dim=64, ffn=128, layers=2, heads=4, kv=2, head_dim=32, qk_norm=True,
                vocab=bpe_vocab("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])),
  "quant": dict(arch="llama", dim=64, ffn=128, layers=2, heads=4, kv=2, vocab=spm_vocab(), quant={"attn": Q.Q8_0, "ffn": Q.Q4_0, "token_embd": Q.Q8_0}),
  # the codebook types (gguf-py cannot quantize to them: random blocks, each block's scale set to the weight's spread)
  # wide enough for the CPU's packed GEMM (tensor/gemm.cpp: B of 1 MiB, 64 rows of A) in a prompt chunk of 64 tokens
  "wide": dict(arch="llama", dim=512, ffn=512, layers=1, heads=8, kv=4, ctx=96, vocab=spm_vocab(), quant={"attn": Q.F16, "ffn": Q.F16}),
  "grid": dict(arch="llama", dim=256, ffn=256, layers=1, heads=4, kv=2, vocab=spm_vocab(), quant={"attn": Q.IQ3_XXS, "ffn": Q.IQ2_S, "token_embd": Q.IQ3_S}),
  # the types with an integer dot product in decode (Q4_K: random blocks too, gguf-py has no Q4_K quantizer)
  "kquant": dict(arch="llama", dim=256, ffn=512, layers=2, heads=4, kv=2, vocab=spm_vocab(), quant={"attn": Q.Q4_K, "ffn": Q.Q8_0, "token_embd": Q.Q8_0, "output": Q.Q4_K}),
  # mixtures of experts: qwen3moe (the chosen weights normalized), mixtral (llama with experts, Q8_0 experts), qwen2moe
  # (a gated shared expert, weights not normalized) with a dense first block and the sigmoid router
  "moe": dict(arch="qwen3moe", dim=64, ffn=0, layers=2, heads=4, kv=2, head_dim=32, qk_norm=True, experts=4, used=2, expert_ffn=48,
              theta=1000000.0, vocab=bpe_vocab("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])),
  "mixtral": dict(arch="llama", dim=64, ffn=0, layers=2, heads=4, kv=2, experts=4, used=2, expert_ffn=64, vocab=spm_vocab(),
                  quant={"ffn": Q.Q8_0}),
  "qwen2moe": dict(arch="qwen2moe", dim=64, ffn=96, layers=2, heads=4, kv=2, bias=True, experts=6, used=3, expert_ffn=32,
                   shared_ffn=40, dense=1, gating=2, vocab=bpe_vocab("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])),
  # olmoe: q and k RMSNorm over the whole projection (not per head), 8 experts, weights not normalized
  "olmoe": dict(arch="olmoe", dim=64, ffn=0, layers=2, heads=4, kv=4, qk_norm="full", experts=8, used=2, expert_ffn=32,
                vocab=bpe_vocab("olmo", ["<|endoftext|>", "<|padding|>"])),
  # deepseek2's latent attention (mla: kv_lora, q_lora, nope + rope query heads, value heads) in llama.cpp's current
  # layout (attn_k_b / attn_v_b, *_mla sizes) with V3's routing (sigmoid, selection bias, groups, normalized, scaled), a
  # dense first block and a shared expert; the lite one in the older layout (attn_kv_b, no q_lora), softmax of the
  # chosen logits; the last, sqrt(softplus) scores
  "deepseek2": dict(arch="deepseek2", dim=64, ffn=96, layers=3, heads=4, kv=1, mla=dict(q_lora=24, kv_lora=32, nope=16, rope=8, v=16, split=True),
                    experts=8, used=2, expert_ffn=32, shared_count=1, dense=1, gating=2, probs_bias=True, groups=(4, 2), wnorm=True, wscale=2.5,
                    vocab=bpe_vocab("gpt2", ["<|begin▁of▁sentence|>", "<|end▁of▁sentence|>"])),
  "deepseek2lite": dict(arch="deepseek2", dim=64, ffn=0, layers=2, heads=4, kv=4, mla=dict(q_lora=0, kv_lora=24, nope=8, rope=8, v=12, split=False),
                        experts=4, used=2, expert_ffn=32, shared_count=2, gating=3, yarn=dict(factor=4.0, orig=256, log_mul=0.0707), theta=100.0,
                        vocab=spm_vocab()),
  "deepseek2sp": dict(arch="deepseek2", dim=64, ffn=0, layers=1, heads=2, kv=2, mla=dict(q_lora=16, kv_lora=16, nope=8, rope=16, v=8, split=True),
                      experts=4, used=3, expert_ffn=16, shared_count=1, gating=4, vocab=spm_vocab()),
  # qwen35: gated delta nets (layers 0, 2) between attention layers with output gates and a partial rotation (8 of 16);
  # qwen35moe: a delta net, then attention, with experts
  "qwen35": dict(arch="qwen35", dim=64, ffn=96, layers=4, heads=4, kv=2, head_dim=16, rope_dim=8, qk_norm=True, theta=1000000.0,
                 ssm=dict(conv=4, state=8, groups=2, heads=4, inner=32, every=2), vocab=bpe_vocab("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])),
  "qwen35moe": dict(arch="qwen35moe", dim=64, ffn=0, layers=2, heads=2, kv=1, head_dim=16, rope_dim=16, qk_norm=True, experts=4, used=2,
                    expert_ffn=32, shared_ffn=24, ssm=dict(conv=3, state=8, groups=1, heads=2, inner=16, every=2),
                    vocab=bpe_vocab("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])),
  # YaRN: ramp dims 1..8 of the 8 rotated pairs (theta 100, 512 original positions), the magnitude 1 + 0.1 ln 4
  "qwen3yarn": dict(arch="qwen3", dim=64, ffn=96, layers=2, heads=4, kv=2, head_dim=16, qk_norm=True, theta=100.0,
                    yarn=dict(factor=4.0, orig=512), vocab=bpe_vocab("qwen2", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])),
}
GRID_TYPES = (Q.IQ3_XXS, Q.IQ3_S, Q.IQ2_S)

def grid_blocks(rng, shape, std, q):  # random blocks of a type whose first field is the float16 d, each block of spread `std`
  blck, nbytes = gguf.GGML_QUANT_SIZES[q]
  raw = rng.integers(0, 256, (int(np.prod(shape)) // blck, nbytes), dtype=np.uint8)
  raw[:, 0:2] = np.full((raw.shape[0], 1), 1.0, np.float16).view(np.uint8)
  d = std / gguf.quants.dequantize(raw, q).std(-1, keepdims=True)  # the values are linear in d
  raw[:, 0:2] = d.astype(np.float16).view(np.uint8)
  return raw.reshape(*shape[:-1], shape[-1] // blck * nbytes)

def q4k_blocks(rng, shape, std):  # random Q4_K blocks: dmin set so each block's mean is about 0, then d and dmin scaled to `std`
  raw = rng.integers(0, 256, (int(np.prod(shape)) // 256, 144), dtype=np.uint8)
  def deq(d, dmin):
    raw[:, 0:2], raw[:, 2:4] = d.astype(np.float16).view(np.uint8), dmin.astype(np.float16).view(np.uint8)
    return gguf.quants.dequantize(raw, Q.Q4_K)
  one, zero = np.ones((raw.shape[0], 1)), np.zeros((raw.shape[0], 1))
  v, m = deq(one, zero), -deq(zero, one)  # the scaled nibbles, the mins
  r = v.mean(-1, keepdims=True) / m.mean(-1, keepdims=True)
  s = std / deq(one, r).std(-1, keepdims=True)
  deq(s, r * s)
  return raw.reshape(*shape[:-1], shape[-1] // 256 * 144)

BENCH = dict(arch="llama", dim=256, ffn=768, layers=4, heads=8, kv=4, vocab=bpe_vocab("gpt2", ["<|startoftext|>", "<|endoftext|>"]),
             quant={k: Q.Q8_0 for k in ("attn", "ffn", "token_embd", "output")})

def write(path, name, seed):
  c, rng = MODELS[name] if name in MODELS else BENCH, np.random.default_rng(seed)
  v, d, hd = c["vocab"], c["dim"], c.get("head_dim", c["dim"] // c["heads"])
  n_vocab = len(v["tokens"])
  w = gguf.GGUFWriter(path, arch=c["arch"])
  w.add_block_count(c["layers"]); w.add_context_length(c.get("ctx", 64)); w.add_embedding_length(d)
  if c["ffn"]: w.add_feed_forward_length(c["ffn"])
  if c.get("experts"): w.add_expert_count(c["experts"]); w.add_expert_used_count(c["used"]); w.add_expert_feed_forward_length(c["expert_ffn"])
  if c.get("shared_ffn"): w.add_expert_shared_feed_forward_length(c["shared_ffn"])
  if c.get("dense"): w.add_leading_dense_block_count(c["dense"])
  if c.get("gating"): w.add_uint32(gguf.Keys.LLM.EXPERT_GATING_FUNC.format(arch=c["arch"]), c["gating"])  # (gguf-py's enum lacks 3 and 4)
  if c.get("shared_count"): w.add_expert_shared_count(c["shared_count"])
  if c.get("groups"): w.add_expert_group_count(c["groups"][0]); w.add_expert_group_used_count(c["groups"][1])
  if "wnorm" in c: w.add_expert_weights_norm(c["wnorm"])
  if "wscale" in c: w.add_expert_weights_scale(c["wscale"])
  mla = c.get("mla")
  if mla:
    hd = mla["nope"] + mla["rope"]
    if mla["q_lora"]: w.add_q_lora_rank(mla["q_lora"])
    w.add_kv_lora_rank(mla["kv_lora"]); w.add_rope_dimension_count(mla["rope"])
    if mla["split"]:  # llama.cpp's MLA files: key/value_length are the cache row's, *_mla the heads'
      w.add_key_length(mla["kv_lora"] + mla["rope"]); w.add_value_length(mla["kv_lora"]); w.add_key_length_mla(hd); w.add_value_length_mla(mla["v"])
    else: w.add_key_length(hd); w.add_value_length(mla["v"])
  w.add_head_count(c["heads"]); w.add_head_count_kv(c["kv"]); w.add_layer_norm_rms_eps(1e-5); w.add_rope_freq_base(c.get("theta", 10000.0))
  if "head_dim" in c: w.add_key_length(hd); w.add_value_length(hd)
  if "rope_dim" in c: w.add_rope_dimension_count(c["rope_dim"])
  ssm = c.get("ssm")
  if ssm:
    w.add_ssm_conv_kernel(ssm["conv"]); w.add_ssm_state_size(ssm["state"]); w.add_ssm_group_count(ssm["groups"])
    w.add_ssm_time_step_rank(ssm["heads"]); w.add_ssm_inner_size(ssm["inner"]); w.add_full_attention_interval(ssm["every"])
  if "rope_scale" in c: w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR); w.add_rope_scaling_factor(c["rope_scale"])
  if "yarn" in c:
    y = c["yarn"]
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN); w.add_rope_scaling_factor(y["factor"]); w.add_rope_scaling_orig_ctx_len(y["orig"])
    if "log_mul" in y: w.add_rope_scaling_yarn_log_mul(y["log_mul"])
  w.add_tokenizer_model(v["model"]); w.add_token_list(v["tokens"]); w.add_token_types(v["types"])
  if v.get("pre"): w.add_tokenizer_pre(v["pre"])
  if v["scores"]: w.add_token_scores(v["scores"])
  if v["merges"]: w.add_token_merges(v["merges"])
  w.add_bos_token_id(v["bos"]); w.add_eos_token_id(v["eos"])
  def t(name, *shape, scale=None, kind=None):  # a random tensor, quantized when the model says so
    a = (rng.standard_normal(shape) * (scale if scale is not None else shape[-1] ** -0.5 * 1.5)).astype(np.float32)
    q = c.get("quant", {}).get(kind)
    if q in GRID_TYPES: w.add_tensor(name, grid_blocks(rng, shape, a.std(), q), raw_dtype=q)
    elif q == Q.Q4_K: w.add_tensor(name, q4k_blocks(rng, shape, a.std()), raw_dtype=q)
    elif q == Q.F16: w.add_tensor(name, a.astype(np.float16))
    elif q is not None: w.add_tensor(name, gguf.quants.quantize(a, q), raw_dtype=q)
    else: w.add_tensor(name, a)
  norm = lambda name, n: w.add_tensor(name, (1 + 0.2 * rng.standard_normal(n)).astype(np.float32))
  t("token_embd.weight", n_vocab, d, scale=1.0, kind="token_embd")
  for i in range(c["layers"]):
    b = f"blk.{i}."
    norm(b + "attn_norm.weight", d)
    if ssm and (i + 1) % ssm["every"]:  # a gated delta net
      C = 2 * ssm["groups"] * ssm["state"] + ssm["inner"]
      t(b + "attn_qkv.weight", C, d); t(b + "attn_gate.weight", ssm["inner"], d); t(b + "ssm_conv1d.weight", C, ssm["conv"], scale=0.5)
      t(b + "ssm_dt.bias", ssm["heads"], scale=0.5); w.add_tensor(b + "ssm_a", -np.exp(0.5 * rng.standard_normal(ssm["heads"])).astype(np.float32))
      t(b + "ssm_beta.weight", ssm["heads"], d); t(b + "ssm_alpha.weight", ssm["heads"], d)
      norm(b + "ssm_norm.weight", ssm["inner"] // ssm["heads"]); t(b + "ssm_out.weight", d, ssm["inner"])
    elif ssm:  # attention whose query rows carry an output gate per head
      t(b + "attn_q.weight", c["heads"] * hd * 2, d); t(b + "attn_k.weight", c["kv"] * hd, d); t(b + "attn_v.weight", c["kv"] * hd, d)
      t(b + "attn_output.weight", d, c["heads"] * hd); norm(b + "attn_q_norm.weight", hd); norm(b + "attn_k_norm.weight", hd)
    elif mla:
      H, R, nope, V = c["heads"], mla["kv_lora"], mla["nope"], mla["v"]
      if mla["q_lora"]: t(b + "attn_q_a.weight", mla["q_lora"], d); norm(b + "attn_q_a_norm.weight", mla["q_lora"]); t(b + "attn_q_b.weight", H * hd, mla["q_lora"])
      else: t(b + "attn_q.weight", H * hd, d)
      t(b + "attn_kv_a_mqa.weight", R + mla["rope"], d); norm(b + "attn_kv_a_norm.weight", R)
      if mla["split"]: t(b + "attn_k_b.weight", H, R, nope); t(b + "attn_v_b.weight", H, V, R)
      else: t(b + "attn_kv_b.weight", H * (nope + V), R)
      t(b + "attn_output.weight", d, H * V)
    else:
      t(b + "attn_q.weight", c["heads"] * hd, d, kind="attn"); t(b + "attn_k.weight", c["kv"] * hd, d, kind="attn")
      t(b + "attn_v.weight", c["kv"] * hd, d, kind="attn"); t(b + "attn_output.weight", d, c["heads"] * hd, kind="attn")
    if c.get("bias"): t(b + "attn_q.bias", c["heads"] * hd, scale=0.5); t(b + "attn_k.bias", c["kv"] * hd, scale=0.5); t(b + "attn_v.bias", c["kv"] * hd, scale=0.5)
    if c.get("qk_norm") == "full": norm(b + "attn_q_norm.weight", c["heads"] * hd); norm(b + "attn_k_norm.weight", c["kv"] * hd)
    elif c.get("qk_norm") and not ssm: norm(b + "attn_q_norm.weight", hd); norm(b + "attn_k_norm.weight", hd)
    norm(b + ("post_attention_norm.weight" if ssm else "ffn_norm.weight"), d)
    if c.get("experts") and i >= c.get("dense", 0):
      e, ef = c["experts"], c["expert_ffn"]
      t(b + "ffn_gate_inp.weight", e, d, scale=1.0)
      t(b + "ffn_gate_exps.weight", e, ef, d, kind="ffn"); t(b + "ffn_up_exps.weight", e, ef, d, kind="ffn"); t(b + "ffn_down_exps.weight", e, d, ef, kind="ffn")
      if c.get("probs_bias"): t(b + "exp_probs_b.bias", e, scale=0.3)
      if c.get("shared_ffn") or c.get("shared_count"):
        sf = c.get("shared_ffn") or c["shared_count"] * ef
        t(b + "ffn_gate_shexp.weight", sf, d); t(b + "ffn_up_shexp.weight", sf, d); t(b + "ffn_down_shexp.weight", d, sf)
        if c.get("shared_ffn"): t(b + "ffn_gate_inp_shexp.weight", d)
    else:
      t(b + "ffn_gate.weight", c["ffn"], d, kind="ffn"); t(b + "ffn_up.weight", c["ffn"], d, kind="ffn"); t(b + "ffn_down.weight", d, c["ffn"], kind="ffn")
  norm("output_norm.weight", d)
  if not c.get("tied"): t("output.weight", n_vocab, d, kind="output")
  w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

# ** 2. the float64 forward **

class Ref:
  def __init__(self, path):
    r = gguf.GGUFReader(path)
    kv = {k: f.contents() for k, f in r.fields.items()}
    self.w = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape([int(x) for x in reversed(t.shape)]) for t in r.tensors}
    self.types = {t.name: t.tensor_type for t in r.tensors}
    self.qdot = set()  # the types whose linears take int8 activations
    a = kv["general.architecture"]
    self.neox = a in ("qwen2", "qwen3", "qwen2moe", "qwen3moe", "olmoe", "qwen35", "qwen35moe")
    self.every = kv.get(f"{a}.full_attention_interval", 0) if f"{a}.ssm.inner_size" in kv else 0  # qwen35: layers i with (i + 1) % every are delta nets
    if self.every: self.ssm = {k: kv[f"{a}.ssm.{k}"] for k in ("conv_kernel", "state_size", "group_count", "time_step_rank", "inner_size")}
    # llama.cpp's mixture of experts: the router's softmax (1) or sigmoid (2) scores, the top `used` of them, divided by
    # their sum where the architecture does (llama = mixtral, qwen3moe) or expert_weights_norm says so
    self.used, self.gating = kv.get(f"{a}.expert_used_count", 0), kv.get(f"{a}.expert_gating_func", 1)
    self.wnorm = bool(kv.get(f"{a}.expert_weights_norm", a in ("llama", "qwen3moe", "qwen35moe")))
    self.wscale = kv.get(f"{a}.expert_weights_scale", 1.0)
    self.layers, self.heads, self.kv = kv[f"{a}.block_count"], kv[f"{a}.attention.head_count"], kv[f"{a}.attention.head_count_kv"]
    self.hd = kv.get(f"{a}.attention.key_length_mla", kv.get(f"{a}.attention.key_length", kv[f"{a}.embedding_length"] // self.heads))
    self.rd, self.kv_lora = kv.get(f"{a}.rope.dimension_count", self.hd), kv.get(f"{a}.attention.kv_lora_rank", 0)
    self.groups = (kv.get(f"{a}.expert_group_count", 0), kv.get(f"{a}.expert_group_used_count", 0))
    self.eps, self.theta = kv[f"{a}.attention.layer_norm_rms_epsilon"], kv.get(f"{a}.rope.freq_base", 10000.0)
    self.scale = kv[f"{a}.rope.scaling.factor"] if kv.get(f"{a}.rope.scaling.type") in ("linear", "yarn") else 1.0
    # YaRN as Hugging Face's rope utils compute it: the ramp's ends from the original context, the magnitude on cos and
    # sin, or (deepseek: mscale_all_dim, stored as 0.1 x it) on the attention scores
    self.yarn = kv.get(f"{a}.rope.scaling.type") == "yarn"
    self.orig = kv.get(f"{a}.rope.scaling.original_context_length", 0)
    m_all = kv.get(f"{a}.rope.scaling.yarn_log_multiplier", 0) / 0.1
    get_mscale = lambda m: 0.1 * m * np.log(self.scale) + 1 if self.scale > 1 else 1.0
    self.rope_mag = (1.0 if m_all else get_mscale(1)) if self.yarn else 1.0
    self.score_mul = get_mscale(m_all) ** 2 if self.yarn and m_all else 1.0
    if "output.weight" not in self.w: self.w["output.weight"] = self.w["token_embd.weight"]
    self.w = {k.replace("post_attention_norm", "ffn_norm"): v for k, v in self.w.items()}

  def mm(self, x, name):  # x @ W^T; with qdot, x's rows as the int8 blocks ggml-cpu multiplies a Q8_0 / Q4_K weight with
    t = self.types.get(name, self.types.get("token_embd.weight") if name == "output.weight" else None)
    if t in self.qdot and t == Q.Q8_0:  # quantize_row_q8_0 (x86): d = amax / 127 as float16, q = round(x * 127 / amax)
      b = x.astype(np.float32).reshape(x.shape[0], -1, 32)
      amax = np.abs(b).max(-1, keepdims=True)
      with np.errstate(divide="ignore"): q = np.rint(b * np.where(amax != 0, np.float32(127) / amax, np.float32(0)).astype(np.float32))
      x = (q * (amax / np.float32(127)).astype(np.float16).astype(np.float64)).reshape(x.shape)
    elif t in self.qdot and t == Q.Q4_K:  # quantize_row_q8_K_ref: d = max / -127 of the element of the largest magnitude
      b = x.astype(np.float32).reshape(x.shape[0], -1, 256)
      mx = np.take_along_axis(b, np.abs(b).argmax(-1)[..., None], -1)
      with np.errstate(divide="ignore"): iscale = np.where(mx != 0, np.float32(-127) / mx, np.float32(0)).astype(np.float32)
      with np.errstate(divide="ignore"): d = np.where(mx != 0, np.float32(1) / iscale, np.float32(0)).astype(np.float32)
      x = (np.minimum(127, np.rint(b * iscale)) * d.astype(np.float64)).reshape(x.shape)
    return x @ self.w[name].T

  def rms(self, x, w): return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w

  def rope(self, x, pos):  # x (T, heads, n) all rotated; llama rotates (x[2i], x[2i+1]), neox (x[i], x[i + n/2])
    half, n = x.shape[-1] // 2, x.shape[-1]
    inv = self.theta ** (-2.0 * np.arange(half) / n)
    if self.yarn:  # per pair: extrapolated below `low`, interpolated above `high`, linear in between
      dim = lambda rot: n * np.log(self.orig / (rot * 2 * np.pi)) / (2 * np.log(self.theta))
      low, high = max(np.floor(dim(32)), 0), min(np.ceil(dim(1)), n - 1)
      keep = 1 - np.clip((np.arange(half) - low) / max(high - low, 0.001), 0, 1)
      inv = inv / self.scale * (1 - keep) + inv * keep
    else: inv = inv / self.scale
    ang = pos[:, None] * inv  # (T, half)
    cos, sin = np.cos(ang)[:, None, :] * self.rope_mag, np.sin(ang)[:, None, :] * self.rope_mag
    out = x.copy()
    if self.neox: a, b, ia, ib = x[..., :half], x[..., half:], np.s_[..., :half], np.s_[..., half:]
    else: a, b, ia, ib = x[..., 0::2], x[..., 1::2], np.s_[..., 0::2], np.s_[..., 1::2]
    out[ia], out[ib] = a * cos - b * sin, a * sin + b * cos
    return out

  def swiglu(self, f, name):  # name: "...ffn_{}.weight" for gate, up, down
    a = self.mm(f, name.format("gate"))
    return self.mm((a / (1 + np.exp(-a))) * self.mm(f, name.format("up")), name.format("down"))

  def moe(self, f, i):  # each token's chosen experts, one at a time
    W, b = self.w, f"blk.{i}."
    logits = f @ W[b + "ffn_gate_inp.weight"].T
    softmax = lambda z: np.exp(z - z.max(-1, keepdims=True)) / np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True)
    scores = {1: lambda: softmax(logits), 2: lambda: 1 / (1 + np.exp(-logits)), 3: lambda: logits, 4: lambda: np.sqrt(np.log1p(np.exp(logits)))}[self.gating]()
    choose = scores + (W[b + "exp_probs_b.bias"] if b + "exp_probs_b.bias" in W else 0)
    out = np.zeros_like(f)
    for t in range(f.shape[0]):
      c = choose[t].copy()
      if self.groups[0] > 1:  # keep the groups whose two best experts sum highest
        g = c.reshape(self.groups[0], -1)
        top = np.argsort(-np.sort(g, -1)[:, -2:].sum(-1), kind="stable")[:self.groups[1]]
        c = np.where(np.isin(np.arange(self.groups[0]), top)[:, None], g, -np.inf).reshape(-1)
      sel = np.argsort(-c, kind="stable")[:self.used]
      w = softmax(scores[t, sel]) if self.gating == 3 else scores[t, sel]
      w = w / (w.sum() if self.wnorm else 1) * self.wscale
      for e, we in zip(sel, w):
        a = f[t] @ W[b + "ffn_gate_exps.weight"][e].T
        out[t] += we * (((a / (1 + np.exp(-a))) * (f[t] @ W[b + "ffn_up_exps.weight"][e].T)) @ W[b + "ffn_down_exps.weight"][e].T)
    if b + "ffn_gate_shexp.weight" in W:
      sh = self.swiglu(f, b + "ffn_{}_shexp.weight")
      if b + "ffn_gate_inp_shexp.weight" in W: sh = sh / (1 + np.exp(-(f @ W[b + "ffn_gate_inp_shexp.weight"])))[:, None]
      out += sh
    return out

  def latent(self, h, i, pos):  # deepseek2's attention with the keys and values decompressed: per head, plain attention
    W, T, H, R = self.w, h.shape[0], self.heads, self.kv_lora
    nope = self.hd - self.rd
    g = lambda n: W[f"blk.{i}.{n}"]
    q = self.mm(self.rms(self.mm(h, f"blk.{i}.attn_q_a.weight"), g("attn_q_a_norm.weight")), f"blk.{i}.attn_q_b.weight") \
      if f"blk.{i}.attn_q_a.weight" in W else self.mm(h, f"blk.{i}.attn_q.weight")
    q = q.reshape(T, H, self.hd)
    q = np.concatenate([q[..., :nope], self.rope(q[..., nope:], pos)], -1)
    kva = self.mm(h, f"blk.{i}.attn_kv_a_mqa.weight")
    ckv, k_rope = self.rms(kva[:, :R], g("attn_kv_a_norm.weight")), self.rope(kva[:, None, R:], pos)  # (T, R), (T, 1, rope)
    if f"blk.{i}.attn_k_b.weight" in W: kb, vb = g("attn_k_b.weight"), g("attn_v_b.weight")  # (H, R, nope), (H, V, R)
    else: kvb = g("attn_kv_b.weight").reshape(H, -1, R); kb, vb = kvb[:, :nope].transpose(0, 2, 1), kvb[:, nope:]
    k = np.concatenate([np.einsum("tr,hrn->thn", ckv, kb), np.repeat(k_rope, H, axis=1)], -1)  # (T, H, hd)
    v = np.einsum("tr,hvr->thv", ckv, vb)
    s = np.einsum("thd,shd->hts", q, k) * self.score_mul / np.sqrt(self.hd) + np.triu(np.full((T, T), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
    return self.mm(np.einsum("hts,shv->thv", p, v).reshape(T, -1), f"blk.{i}.attn_output.weight")

  def delta_net(self, h, i):  # the whole sequence from zero states: a causal depthwise conv, then the delta rule token by token
    W, T, c = self.w, h.shape[0], self.ssm
    g = lambda n: W[f"blk.{i}.{n}"]
    Hk, Kd, Hv, K = c["group_count"], c["state_size"], c["time_step_rank"], c["conv_kernel"]
    Vd = c["inner_size"] // Hv
    u = np.concatenate([np.zeros((K - 1, g("attn_qkv.weight").shape[0])), self.mm(h, f"blk.{i}.attn_qkv.weight")])  # zero history
    conv = sum(u[j:j + T] * g("ssm_conv1d.weight")[:, j] for j in range(K))
    conv = conv / (1 + np.exp(-conv))
    l2 = lambda z: z / np.sqrt((z * z).sum(-1, keepdims=True) + self.eps)
    q, k = l2(conv[:, :Hk * Kd].reshape(T, Hk, Kd)), l2(conv[:, Hk * Kd:2 * Hk * Kd].reshape(T, Hk, Kd))
    q, k = q[:, np.arange(Hv) % Hk] / np.sqrt(Kd), k[:, np.arange(Hv) % Hk]  # value head j reads key head j mod Hk
    v = conv[:, 2 * Hk * Kd:].reshape(T, Hv, Vd)
    beta = 1 / (1 + np.exp(-self.mm(h, f"blk.{i}.ssm_beta.weight")))
    decay = np.exp(np.log1p(np.exp(self.mm(h, f"blk.{i}.ssm_alpha.weight") + g("ssm_dt.bias"))) * g("ssm_a"))
    S, out = np.zeros((Hv, Vd, Kd)), np.zeros((T, Hv, Vd))
    for t in range(T):
      S = S * decay[t][:, None, None]
      S = S + np.einsum("hv,hk->hvk", (v[t] - np.einsum("hvk,hk->hv", S, k[t])) * beta[t][:, None], k[t])
      out[t] = np.einsum("hvk,hk->hv", S, q[t])
    z = self.mm(h, f"blk.{i}.attn_gate.weight").reshape(T, Hv, Vd)
    y = self.rms(out, g("ssm_norm.weight")) * z / (1 + np.exp(-z))
    return self.mm(y.reshape(T, -1), f"blk.{i}.ssm_out.weight")

  def forward(self, tokens):  # log-softmax of every position, attending causally over the whole sequence
    W, T = self.w, len(tokens)
    x, pos = W["token_embd.weight"][tokens], np.arange(T, dtype=np.float64)
    for i in range(self.layers):
      g = lambda n: W[f"blk.{i}.{n}"]
      h = self.rms(x, g("attn_norm.weight"))
      if self.kv_lora or (self.every and (i + 1) % self.every):
        x = x + (self.latent(h, i, pos) if self.kv_lora else self.delta_net(h, i))
        f = self.rms(x, g("ffn_norm.weight"))
        x = x + (self.moe(f, i) if f"blk.{i}.ffn_gate_inp.weight" in W else self.swiglu(f, f"blk.{i}.ffn_{{}}.weight"))
        continue
      q, k, v = (self.mm(h, f"blk.{i}.attn_{n}.weight") + (g(f"attn_{n}.bias") if f"blk.{i}.attn_{n}.bias" in W else 0) for n in "qkv")
      if self.every: q, gate = q.reshape(T, self.heads, 2, self.hd)[:, :, 0].reshape(T, -1), q.reshape(T, self.heads, 2, self.hd)[:, :, 1].reshape(T, -1)
      full = f"blk.{i}.attn_q_norm.weight" in W and W[f"blk.{i}.attn_q_norm.weight"].size == q.shape[-1]  # olmoe: before the heads
      if full: q, k = self.rms(q, g("attn_q_norm.weight")), self.rms(k, g("attn_k_norm.weight"))
      q, k, v = q.reshape(T, self.heads, self.hd), k.reshape(T, self.kv, self.hd), v.reshape(T, self.kv, self.hd)
      if f"blk.{i}.attn_q_norm.weight" in W and not full: q, k = self.rms(q, g("attn_q_norm.weight")), self.rms(k, g("attn_k_norm.weight"))
      rot = lambda z: np.concatenate([self.rope(z[..., :self.rd], pos), z[..., self.rd:]], -1)  # the first rope dims turn
      q, k = rot(q), rot(k)
      rep = self.heads // self.kv
      k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)  # query head j reads kv head j // rep
      s = np.einsum("thd,shd->hts", q, k) / np.sqrt(self.hd) + np.triu(np.full((T, T), -np.inf), 1)
      p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
      o = np.einsum("hts,shd->thd", p, v).reshape(T, -1)
      if self.every: o = o / (1 + np.exp(-gate))
      x = x + self.mm(o, f"blk.{i}.attn_output.weight")
      f = self.rms(x, g("ffn_norm.weight"))
      x = x + (self.moe(f, i) if f"blk.{i}.ffn_gate_inp.weight" in W else self.swiglu(f, f"blk.{i}.ffn_{{}}.weight"))
    l = self.mm(self.rms(x, W["output_norm.weight"]), "output.weight")
    m = l.max(-1, keepdims=True)
    return l - m - np.log(np.exp(l - m).sum(-1, keepdims=True))

if __name__ == "__main__":
  if sys.argv[1] == "write":
    for i, name in enumerate(MODELS): write(f"{sys.argv[2]}/{name}.gguf", name, 100 + i)
  elif sys.argv[1] == "bench":
    write(sys.argv[2], "bench", 7)
  elif sys.argv[1] == "forward":
    ref, toks, n = Ref(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")], int(sys.argv[4])
    # decode's linears with int8 activations (QUANT_DOT): "qdot" Q8_0 and Q4_K (QUANT_DOT=2), "qdot:Q4_K" Q4_K only (1)
    arg = sys.argv[5] if len(sys.argv) > 5 else ""
    ref.qdot = {Q.Q8_0, Q.Q4_K} if arg == "qdot" else {Q.Q4_K} if arg == "qdot:Q4_K" else set()
    lp = ref.forward(toks)
    greedy, seq = [], list(toks)
    for _ in range(n):  # greedy: the whole sequence again per token (no cache: the oracle stays the simplest forward)
      seq.append(int(np.argmax(ref.forward(seq)[-1]))); greedy.append(seq[-1])
    json.dump({"logprobs": lp.tolist(), "greedy": greedy}, sys.stdout)
