#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (standard library only).

usage: make_seeds.py OUT_DIR BRISK_CLI SHARED_DIR
Writes OUT_DIR/<target>/seed-* from small hand-made files and ../shared
data; nothing here is stored in the repository.
"""
import json, os, shutil, struct, subprocess, sys

out, brisk, shared = sys.argv[1], sys.argv[2], sys.argv[3]

def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b

def tiny_gguf():
    """A small llama-shaped GGUF: a few hyper-parameters, an 8-token vocab, three tensors."""
    kv = []
    def add(key, type_id, payload):
        kv.append(gguf_string(key) + struct.pack("<I", type_id) + payload)
    add("general.architecture", 8, gguf_string("llama"))
    for k, v in [("llama.embedding_length", 32), ("llama.block_count", 1), ("llama.feed_forward_length", 32),
                 ("llama.attention.head_count", 4), ("llama.context_length", 64)]:
        add(k, 4, struct.pack("<I", v))
    add("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5))
    add("tokenizer.ggml.model", 8, gguf_string("llama"))
    toks = ["<unk>", "<s>", "</s>", "\u2581a", "b", "\u2581ab", "<0x0A>", "c"]
    add("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, len(toks)) + b"".join(gguf_string(t) for t in toks))
    add("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, len(toks)) + struct.pack("<8f", *range(8)))
    add("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, len(toks)) + struct.pack("<8i", 2, 3, 3, 1, 1, 1, 6, 1))
    tensors = [("token_embd.weight", [32, 8], 0), ("output_norm.weight", [32], 0), ("blk.0.attn_q.weight", [32, 2], 8)]
    infos, data, off = b"", b"", 0
    for name, ne, t in tensors:
        n = 1
        for d in ne:
            n *= d
        size = n * 4 if t == 0 else n // 32 * 34
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", t, off)
        data += bytes((i * 7 + 3) & 0xFF for i in range(size)) + b"\0" * ((-size) % 32)
        off += size + (-size) % 32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)) + b"".join(kv) + infos
    return head + b"\0" * ((-len(head)) % 32) + data

tmp = os.path.join(out, "tmp")
os.makedirs(tmp, exist_ok=True)
plain = os.path.join(tmp, "tiny.gguf")
with open(plain, "wb") as f:
    f.write(tiny_gguf())
signed = os.path.join(tmp, "tiny-manifest.gguf")
subprocess.run([brisk, "verify", "--add-manifest", plain, "-o", signed], check=True)
bundle = os.path.join(tmp, "tiny.brisk")
subprocess.run([brisk, "pack", signed, "-o", bundle, "--level", "1"], check=True)
put("gguf", "seed-plain", open(plain, "rb").read())
put("gguf", "seed-manifest", open(signed, "rb").read())
b = open(bundle, "rb").read()
put("bundle", "seed-raw", b"\x01" + b)
mlen = struct.unpack("<Q", b[16:24])[0]
put("bundle", "seed-framed", b"\x00" + struct.pack("<H", mlen) + b[40:])

def safetensors(tensors):
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, dtype, shape, size in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + size]}
        data += bytes(range(size % 256)) * (size // 256) + bytes(range(size % 256))
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data
put("safetensors", "seed-1", safetensors([("model.norm.weight", "F32", [4], 16), ("w", "BF16", [2, 3], 12)]))
put("safetensors", "seed-2", safetensors([("a", "F16", [8], 16), ("b", "I64", [1], 8), ("c", "U8", [0], 0)]))

for i, d in enumerate(["stories260K-hf-f32", "stories260K-hf-bf16", "logstories/logstories-hf-f16"]):
    for f in ["config.json", "tokenizer_config.json", "generation_config.json"]:
        p = os.path.join(shared, "models", d, f)
        if os.path.exists(p):
            put("hf_config", "seed-%d-%s" % (i, f), open(p, "rb").read())
p = os.path.join(shared, "models", "stories260K-hf-f32", "tokenizer.json")
if os.path.exists(p):
    put("tokenizer_json", "seed-stories", open(p, "rb").read().lstrip()[1:])  # the target adds the '{'
put("tokenizer_json", "seed-bpe", json.dumps({
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3}, "merges": ["a b"]},
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
    "added_tokens": [{"id": 4, "content": "<|end|>", "special": True}]}).encode()[1:])
shutil.rmtree(tmp)
