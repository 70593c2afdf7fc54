#!/usr/bin/env python3
"""Write the oracle of tests/tokenizer: vocabularies trained with Hugging Face `tokenizers` on Debian's fortune cookie
texts, and the ids `tokenizers` gives for a text set. Run by test_tokenizer at test time (setup.sh's .venv):

  .venv/bin/python3 tests/tools/gen_tokenizer_cases.py OUT.json

  bpe  a byte-level BPE (tokenizer.ggml.model "gpt2") with control and user-defined tokens appended; the ids of each
       text under the pre-tokenizers gpt2 (ByteLevel's own regex), llama3 and qwen2 (Split by their regex, then
       ByteLevel; llama3 with ignore_merges), and under gpt2 with only the user-defined tokens (parse_special=false);
       the pieces each regex alone cuts each text into
  spm  a llama-2-style vocab (tokenizer.ggml.model "llama": <unk> <s> </s>, the 256 <0xNN> byte tokens, pieces scored by
       merge order) and the ids of a BPE with byte fallback built from it the way transformers' SpmConverter does
       (every split of a piece into two pieces is a merge, ranked by the piece's score), normalizer Prepend("▁") +
       Replace(" ", "▁") per fragment between special tokens, BOS added
"""
import glob, json, os, random, sys
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

FORTUNES = "/usr/share/games/fortunes"
GPT2_RE = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_RE = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2_RE = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

def fortunes():
  files = [f for f in sorted(glob.glob(f"{FORTUNES}/*")) if not f.endswith((".dat", ".u8"))]
  if not files: sys.exit(f"no fortune files in {FORTUNES} (Debian package fortunes)")
  out = []
  for f in files: out += [t for t in open(f, encoding="utf-8", errors="replace").read().split("\n%\n") if t.strip()]
  return out

# a little text in other scripts, so the vocabularies have merges beyond ASCII
MULTI = ["Größe café naïve résumé déjà vu façade", "日本語のテキストを書きます。東京は大きい。", "中文分词测试，我们的世界。",
         "Привет, мир! Как дела?", "Ελληνικά γράμματα", "한국어 텍스트입니다", "emoji 😀😃👍 party 🎉"]

TEXTS = [
  "", " ", "  ", "\n", "\n\n\n", "Hello world", "Hello, World!", " leading space", "  two leading", "trailing   ",
  "tabs\tand\t\ttabs", "mixed \t\n \r\n spaces\n", "CRLF\r\nline\r\n\r\n", "a\n\n\nb", "  \n  x", "x \n\n y",
  "I'm you're we've they'll she'd it's don't", "I'M YOU'RE WE'VE THEY'LL SHE'D IT'S", "'s 't 're", "x'S'sT", "it\u017fs 'ſ it'ſ it'ſs", "a tokenizers unreachable",
  "1 12 123 1234 12345 1234567", "3.14159 2024-12-05 $1,000,000.00", "x1y22z333w4444", "０１２ ٣٤٥ Ⅻ ² ½",
  "café naïve résumé", "cafe\u0301 (decomposed)", "日本語のテキスト", "中文分词测试", "한국어", "Привет мир", "Ελληνικά",
  "😀😃 emoji 👍🏽 family 👨\u200d👩\u200d👧", "\u00a0nbsp\u3000ideographic\u2003em", "line\u2028sep\u2029para\u0085nel",
  "unit\u001fsep\u001c", "zero\u200bwidth\ufeffbom", "control \x01\x02\x7f\b chars", "Hello!!! What??? ...", "<html><body>x</body></html>",
  "a+b=c; d*e/f", "@user #tag $var %p ^x &y ~z |w", "def f(x):\n    return x**2\n", "if (a && b) {\n\t\tc();\n}\n",
  "<|endoftext|>", "Hi<|endoftext|>there", "<|im_start|>user\nHello<|im_end|>\n", "<|endoftext|><|endoftext|>", "<|endoftext",
  "a [SEP] b[SEP]c", " <|im_end|> [SEP] ", "<s>hello</s> <unk>", "x<s>",
]

def random_texts(rng, n):
  """strings of assigned code points from many scripts and categories (marks, symbols, other digits, spaces, emoji),
  salted with the characters the regexes single out ('s, \r, \n, spaces, digits)"""
  import unicodedata
  by_cat = {}
  for c in map(chr, range(0x20000)): by_cat.setdefault(unicodedata.category(c), []).append(c)
  cats = sorted(k for k in by_cat if k not in ("Cn", "Cs", "Co"))  # a category first, so marks and spaces are not rare
  salt = list("'sStTdDmMlLrReEvV \t\r\n\u00a0\u3000\u2028") + ["'s", "'LL", "  ", "\r\n", "123", "4567"]
  pick = lambda: rng.choice(salt) if rng.random() < 0.4 else rng.choice(by_cat[rng.choice(cats)])
  return ["".join(pick() for _ in range(rng.randint(1, 30))) for _ in range(n)]

def cases(tok, texts, add_special=False):
  return [{"text": t, "ids": tok.encode(t, add_special_tokens=add_special).ids} for t in texts]

def merges_of(tok):  # [[a, b], ...] in rank order, whichever way this version of tokenizers writes them
  return [m if isinstance(m, list) else m.split(" ", 1) for m in json.loads(tok.to_str())["model"]["merges"]]

def bpe(corpus, texts):
  tok = Tokenizer(models.BPE())
  tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
  tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=1500, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
  vocab, merges = tok.get_vocab(), merges_of(tok)
  # two tokens no merge makes: only llama3's ignore_merges (a piece that is a token is that token) reaches them
  for t in ["Ġtokenizers", "Ġunreachable"]: vocab.setdefault(t, len(vocab))
  tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
  control, user = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], ["[SEP]"]
  out = {"tokens": tokens + control + user, "token_type": [1] * len(tokens) + [3] * len(control) + [4] * len(user),
         "merges": [f"{a} {b}" for a, b in merges], "cases": {}, "pieces": {}}
  def oracle(split_re, ignore_merges, added):
    # control tokens not added are in the model's vocab only, to keep their ids (no merge makes them)
    full = vocab | {s: len(tokens) + i for i, s in enumerate(control) if s not in added}
    t = Tokenizer(models.BPE(full, [tuple(m) for m in merges], ignore_merges=ignore_merges))
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split_re is None)
    t.pre_tokenizer = bl if split_re is None else pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split_re), "isolated"), bl])
    t.decoder = decoders.ByteLevel()
    t.add_tokens([AddedToken(s, special=s in control, normalized=False) for s in added])
    assert all(t.token_to_id(s) == len(tokens) + (control + user).index(s) for s in added)
    return t
  for name, rx, im in [("gpt2", None, False), ("llama3", LLAMA3_RE, True), ("qwen2", QWEN2_RE, False)]:
    out["cases"][name] = cases(oracle(rx, im, control + user), texts)
    # the regex alone, over the whole text: the pieces the pre-tokenizer must cut
    split = pre_tokenizers.Split(Regex(rx or GPT2_RE), "isolated")
    out["pieces"][name] = [[p for p, _ in split.pre_tokenize_str(t)] for t in texts]
  # control tokens left as text: what parse_special=false gives (user-defined tokens are still matched)
  out["cases"]["gpt2_raw"] = cases(oracle(None, False, user), texts)
  return out

def spm(corpus, texts):
  tok = Tokenizer(models.BPE())
  tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
  tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
  # limit_alphabet leaves the rarer characters out: those take the <0xNN> byte fallback
  tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=1200, limit_alphabet=150, show_progress=False))
  pieces = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
  control, user = ["<unk>", "<s>", "</s>"], ["[SEP]"]
  byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
  tokens = control + byte_tokens + pieces + user
  types = [2, 3, 3] + [6] * 256 + [1] * len(pieces) + [4] * len(user)
  scores = [0.0] * (3 + 256) + [-float(i) for i in range(len(pieces))] + [0.0] * len(user)
  ids = {t: i for i, t in enumerate(tokens)}
  normal = set(pieces)
  merges = sorted(((p[:k], p[k:]) for p in pieces for k in range(1, len(p)) if p[:k] in normal and p[k:] in normal),
                  key=lambda m: (ids[m[0] + m[1]], ids[m[0]], ids[m[1]]))
  t = Tokenizer(models.BPE(ids, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
  t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
  t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)])
  t.add_tokens([AddedToken(s, special=s in control, normalized=False) for s in control + user])
  t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
  assert all(t.token_to_id(s) == ids[s] for s in control + user)
  return {"tokens": tokens, "token_type": types, "scores": scores, "bos": 1, "eos": 2, "unk": 0,
          "cases": {"llama": cases(t, texts, add_special=True)}}

def main():
  if len(sys.argv) != 2: sys.exit(__doc__)
  all_fortunes = fortunes()
  corpus = all_fortunes + MULTI * 20
  rng = random.Random(15)
  sample = rng.sample(all_fortunes, 60)
  texts = TEXTS + MULTI + sample + ["\n".join(rng.sample(all_fortunes, 20))] + random_texts(rng, 150)
  out = {"bpe": bpe(corpus, texts), "spm": spm(corpus, texts), "n_fortunes": len(all_fortunes)}
  with open(sys.argv[1], "w", encoding="utf-8") as f: json.dump(out, f, ensure_ascii=False)

if __name__ == "__main__": main()
