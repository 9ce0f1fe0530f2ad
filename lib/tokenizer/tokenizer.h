// SPDX-License-Identifier: MIT
// Text <-> token ids, built from a model's GGUF metadata (or, for converters,
// from a Hugging Face tokenizer.json). Immutable after construction and safe
// to use from many threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::gguf {
class File;
}

namespace brisk {

// GGUF token types (tokenizer.ggml.token_type), as llama.cpp writes them.
enum class TokenType : int32_t {
  UNDEFINED = 0,
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,       // <s>, <|eot_id|>: only from text with parse_special
  USER_DEFINED = 4,  // added tokens: always matched in text before BPE
  UNUSED = 5,
  BYTE = 6,          // <0xNN> byte-fallback tokens
};

// Everything a GGUF file's tokenizer.ggml.* keys hold: what from_gguf reads
// and what a converter writes (see load_hf_vocab). Unset optionals mean "key
// absent": the tokenizer then applies llama.cpp's defaults for the model.
struct VocabData {
  std::string model;  // "llama" (SentencePiece-style BPE) or "gpt2" (byte-level BPE)
  std::string pre;    // pre-tokenizer for "gpt2" ("llama-bpe", "qwen2", ...); "" = absent
  std::string name;   // general.name; only consulted for Phi-3's special-token quirk
  std::vector<std::string> tokens;
  std::vector<float> scores;         // empty = all 0
  std::vector<int32_t> token_types;  // TokenType values; empty = all NORMAL
  std::vector<std::string> merges;   // "left right", best (rank 0) first; gpt2 only
  std::optional<int32_t> bos_id, eos_id, unk_id, pad_id, sep_id, eot_id, eom_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
  std::string chat_template;  // tokenizer.chat_template, "" if none
};

// Reads tokenizer.ggml.* (and tokenizer.chat_template). Throws brisk::Error
// (BRISK_ERR_BAD_FORMAT) for missing or mistyped keys.
VocabData read_gguf_vocab(const gguf::File& file);

// Reads a Hugging Face tokenizer.json (a path, or the JSON text itself when
// it starts with '{') into what convert_hf_to_gguf.py would write: model
// "llama" for SentencePiece-style BPE (byte_fallback + U+2581 spaces; scores
// from merge order), "gpt2" for byte-level BPE (merges, pre from the
// pre-tokenizer regex), token types from added_tokens. BRISK_ERR_UNSUPPORTED
// for other models (WordPiece, Unigram).
VocabData load_hf_vocab(const std::string& path_or_text);

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Reads tokenizer.ggml.* from a GGUF file. Throws brisk::Error with a clear
  // message for missing/mistyped keys or an unsupported tokenizer model.
  // Byte-level BPE needs a pre-tokenizer brisk knows (default, gpt-2,
  // llama-bpe/llama3 and kin, qwen2, deepseek-llm, deepseek-coder,
  // deepseek-v3, starcoder and kin, falcon, dbrx, ...): an unknown
  // tokenizer.ggml.pre is BRISK_ERR_UNSUPPORTED, because a guessed one would
  // silently change the tokens; an absent key means llama.cpp's "default".
  //
  // Every tokenizer accepts any bytes in encode() and any ids in decode()
  // (out-of-range ids decode to nothing), so a fuzz target can build one with
  // from_vocab() or from_hf_json(json_text) and feed it arbitrary input.
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& file);
  // The same from already-read metadata (e.g. a converter's VocabData).
  static std::unique_ptr<Tokenizer> from_vocab(const VocabData& vocab);
  // A tokenizer with Hugging Face `tokenizers` semantics built from a
  // tokenizer.json (path, or JSON text starting with '{'): added tokens,
  // normalizer, pre-tokenizer, BPE model (byte_fallback, ignore_merges),
  // decoder. BRISK_ERR_UNSUPPORTED for components it does not implement.
  static std::unique_ptr<Tokenizer> from_hf_json(const std::string& path_or_text);

  // add_bos: prepend BOS if the vocabulary's metadata asks for it
  // (tokenizer.ggml.add_bos_token; llama/SPM defaults to true), and append
  // EOS if tokenizer.ggml.add_eos_token is true (llama.cpp's add_special);
  // parse_special: recognise control tokens written in the text. User-defined
  // tokens are always recognised (as llama.cpp and HF do). Any byte string is
  // accepted: invalid UTF-8 is tokenized as bytes (SPM) or as U+FFFD (BPE).
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const = 0;

  // The raw bytes a token stands for (byte tokens as their byte, SPM's
  // U+2581 as a space, byte-level BPE's mapped bytes decoded). Control tokens
  // give their text ("<s>") only when `special` is true, else "".
  virtual std::string token_to_piece(int32_t id, bool special = false) const = 0;

  // Concatenated pieces; with strip_leading_space, a leading space that the
  // tokenizer itself added (SPM's dummy prefix) is removed from the result.
  // Control tokens give nothing. Unlike llama.cpp's detokenize, no spaces
  // around punctuation are "cleaned up", so decode(encode(x)) == x for valid
  // UTF-8 x (byte-level BPE sees invalid UTF-8 as U+FFFD).
  virtual std::string decode(const int32_t* ids, size_t n, bool strip_leading_space) const = 0;

  virtual int32_t n_vocab() const = 0;
  virtual int32_t bos() const = 0;  // -1 if none
  virtual int32_t eos() const = 0;  // -1 if none
  // End of generation: EOS and other end-of-turn tokens (e.g. <|eot_id|>).
  virtual bool is_eog(int32_t id) const = 0;
  // Whether encode() with add_bos=true adds a BOS for this vocabulary.
  virtual bool adds_bos() const = 0;
  // Whether a leading space is added to the text (SPM dummy prefix).
  virtual bool adds_space_prefix() const = 0;

  // End-of-turn token (<|eot_id|>, <|im_end|>, ...), -1 if none.
  virtual int32_t eot() const = 0;
  // The token's text as stored in the vocabulary ("" for an invalid id).
  virtual std::string_view token_text(int32_t id) const = 0;
  virtual TokenType token_type(int32_t id) const = 0;
  // Id of the token whose text is exactly `text`, -1 if none.
  virtual int32_t find_token(std::string_view text) const = 0;
  // tokenizer.chat_template ("" if the vocabulary has none).
  virtual const std::string& chat_template() const = 0;
};

// Streams token pieces as valid UTF-8: bytes of an incomplete character are
// held back until the character completes; invalid sequences come out as
// U+FFFD rather than as broken bytes.
class Utf8Stream {
 public:
  // Appends bytes; returns the text that is now complete.
  std::string push(std::string_view bytes);
  // Whatever is still pending (as U+FFFD if it never completed).
  std::string flush();
  // The bytes of an incomplete character held for the next push (saved state).
  const std::string& pending() const { return pending_; }

 private:
  std::string pending_;
};

}  // namespace brisk
