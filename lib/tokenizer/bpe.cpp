#include "core/error.h"
#include "tokenizer/vocab.h"

namespace brisk::tok {
std::unique_ptr<Tokenizer> make_bpe(const VocabData&) { fail(BRISK_ERR_UNSUPPORTED, "tokenizer: gpt2 not yet"); }
}  // namespace brisk::tok
