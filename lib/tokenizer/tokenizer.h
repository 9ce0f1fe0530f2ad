// Text <-> token ids, built from a model's GGUF metadata (or, for converters,
// from a Hugging Face tokenizer.json). Immutable after construction and safe
// to use from many threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace brisk::gguf {
class File;
}

namespace brisk {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Reads tokenizer.ggml.* from a GGUF file. Throws brisk::Error with a clear
  // message for missing/mistyped keys or an unsupported tokenizer model.
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& file);

  // add_bos: prepend BOS if the vocabulary's metadata asks for it
  // (tokenizer.ggml.add_bos_token; llama/SPM defaults to true);
  // parse_special: recognise control/user-defined tokens written in the text.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const = 0;

  // The raw bytes a token stands for (byte tokens as their byte, SPM's
  // U+2581 as a space, byte-level BPE's mapped bytes decoded). Control tokens
  // give their text ("<s>") only when `special` is true, else "".
  virtual std::string token_to_piece(int32_t id, bool special = false) const = 0;

  // Concatenated pieces; with strip_leading_space, a leading space that the
  // tokenizer itself added (SPM's dummy prefix) is removed from the result.
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

 private:
  std::string pending_;
};

}  // namespace brisk
