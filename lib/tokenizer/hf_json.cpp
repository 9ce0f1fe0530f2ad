#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace brisk {
VocabData load_hf_vocab(const std::string&) { fail(BRISK_ERR_UNSUPPORTED, "tokenizer: hf not yet"); }
std::unique_ptr<Tokenizer> Tokenizer::from_hf_json(const std::string&) { fail(BRISK_ERR_UNSUPPORTED, "tokenizer: hf not yet"); }
}  // namespace brisk
