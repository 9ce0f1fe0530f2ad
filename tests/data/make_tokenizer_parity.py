#!/usr/bin/env python3
"""Regenerates tokenizer_parity.json: llama.cpp's own token ids for hard inputs.

Reference: llama.cpp's libllama as shipped prebuilt in the npm package
@node-llama-cpp/linux-x64 3.22.1 (MIT), loaded with ctypes:

    npm install --prefix /tmp/llamanpm @node-llama-cpp/linux-x64@3.22.1
    python3 tests/data/make_tokenizer_parity.py /tmp/llamanpm ../shared > tests/data/tokenizer_parity.json

Inputs are random (seeded) strings that stress pre-tokenization: mixed
scripts, unusual whitespace (U+180E, U+3000, U+0085...), unassigned code
points, canonical singletons (U+2126, U+212A), special-token text, and
random invalid UTF-8. Each string is tokenized with add_special=false, once
with parse_special=false ("plain") and once with true (kept only where it
differs).
"""
import ctypes, json, os, random, sys

NPM, SHARED = sys.argv[1], sys.argv[2]
D = os.path.join(NPM, "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/")
ctypes.CDLL(D + "libggml-base.so", mode=ctypes.RTLD_GLOBAL)
G = ctypes.CDLL(D + "libggml.v0.5.0.so", mode=ctypes.RTLD_GLOBAL)
L = ctypes.CDLL(D + "libllama.v0.5.0.so")
G.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_quiet = LOG(lambda a, b, c: None)
L.llama_log_set.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
L.llama_log_set(ctypes.cast(_quiet, ctypes.c_void_p), None)
G.ggml_backend_load_all_from_path(D.encode())
L.llama_backend_init()


class Params(ctypes.Structure):  # llama_model_params, 80 bytes in this build
    _fields_ = [("blob", ctypes.c_ubyte * 256)]


L.llama_model_default_params.restype = Params
L.llama_model_load_from_file.restype = ctypes.c_void_p
L.llama_model_load_from_file.argtypes = [ctypes.c_char_p, Params]
L.llama_model_get_vocab.restype = ctypes.c_void_p
L.llama_model_get_vocab.argtypes = [ctypes.c_void_p]
L.llama_tokenize.restype = ctypes.c_int32
L.llama_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int32),
                             ctypes.c_int32, ctypes.c_bool, ctypes.c_bool]


def load(path):
    p = L.llama_model_default_params()
    p.blob[72] = 1  # vocab_only: offset read from the disassembly of llama_model_default_params
    m = L.llama_model_load_from_file(path.encode(), p)
    assert m, path
    return L.llama_model_get_vocab(m)


def tokenize(vocab, b, parse_special):
    n = len(b) + 16
    buf = (ctypes.c_int32 * n)()
    r = L.llama_tokenize(vocab, b, len(b), buf, n, False, parse_special)
    assert r >= 0
    return list(buf[:r])


random.seed(7)
alphabet = list("abcXYZ019 \t\n\r'\".,!?-_<>|[]{}()/\\") + [
    "é", "ß", "\u03a9", "\u2126", "\u212a", "ſ", "\u1fbe", "ı", "İ", "ﬁ", "①", "½", "٣", "你", "好", "世", "界", "한",
    "국", "あ", "カ", "ー", "🦙", "👍🏽", "\u200b", "\u00a0", "\u3000", "\u2028", "\u0085", "\u1680", "\u180e",
    "\u0301", "ñ", "ğ", "ж", "ע", "ب", "ក្", "\u2581", "Ġ", "Ċ", "\u0378", "\U000e0080"]
specials = ["<s>", "</s>", "<unk>", "<|eot_id|>", "<|begin_of_text|>", "<|start_header_id|>", "<|im_start|>",
            "<|im_end|>", "<|endoftext|>", "<|end|>", "<|user|>", "<｜end▁of▁sentence｜>", "õ", "[PAD100020]",
            "<|reserved_special_token_5|>"]
cases = []
for i in range(300):
    n = random.randrange(0, 40)
    cases.append("".join(random.choice(alphabet + (specials if i % 3 == 0 else [])) for _ in range(n)).encode())
for i in range(100):
    n = random.randrange(0, 24)
    cases.append(bytes(random.choice([random.randrange(256), 0x80, 0xC3, 0xE2, 0xF0, 0x20, 0x61]) for _ in range(n)))

names = ["llama-vocab-tests/ggml-vocab-llama-spm", "vocab-tests/ggml-vocab-phi-3", "vocab-tests/ggml-vocab-gpt-2",
         "vocab-tests/ggml-vocab-llama-bpe", "vocab-tests/ggml-vocab-qwen2", "vocab-tests/ggml-vocab-deepseek-llm",
         "vocab-tests/ggml-vocab-deepseek-coder"]
out = {"source": "llama.cpp's libllama (npm @node-llama-cpp/linux-x64 3.22.1), vocab_only, llama_tokenize with "
                 "add_special=false", "cases": [c.hex() for c in cases], "plain": {}, "parse_special": {}}
for name in names:
    v = load(os.path.join(SHARED, "models", name + ".gguf"))
    key = os.path.basename(name)
    out["plain"][key] = [tokenize(v, c, False) for c in cases]
    out["parse_special"][key] = {str(k): ids for k, c in enumerate(cases)
                                 if (ids := tokenize(v, c, True)) != out["plain"][key][k]}
print(json.dumps(out, separators=(",", ":")))
