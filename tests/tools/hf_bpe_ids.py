#!/usr/bin/env python3
"""The ids Hugging Face `tokenizers` gives for texts under a byte-level BPE built from a given vocab and merges (the
oracle of tests/tokenizer's train_bpe test):

  .venv/bin/python3 tests/tools/hf_bpe_ids.py IN.json OUT.json   IN: {"tokens": [...], "merges": ["a b", ...], "texts": [...]}
                                                                 OUT: [[id, ...], ...] one list per text
"""
import json, sys
from tokenizers import Tokenizer, models, pre_tokenizers

j = json.load(open(sys.argv[1], encoding="utf-8"))
vocab = {t: i for i, t in enumerate(j["tokens"])}
tok = Tokenizer(models.BPE(vocab, [tuple(m.split(" ")) for m in j["merges"]]))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2's regex, then bytes as GPT-2's characters
json.dump([tok.encode(t, add_special_tokens=False).ids for t in j["texts"]], open(sys.argv[2], "w"))
