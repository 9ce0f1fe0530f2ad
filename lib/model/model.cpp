// SPDX-License-Identifier: MIT
#include "model/model.h"

#include <cstdio>
#include <map>

#include "core/error.h"

namespace brisk {

std::unique_ptr<Model> Model::open(const std::string& path, const ModelOpenOptions& options) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::make_unique<gguf::File>(path, options.map);
  const gguf::File& f = *m->file_;
  m->tokenizer_ = Tokenizer::from_gguf(f);
  if (options.vocab_only) {
    m->vocab_only_ = true;
    m->config_.arch_name = f.opt_string("general.architecture").value_or("");
    m->config_.n_vocab = m->tokenizer_->n_vocab();
    return m;
  }
  if (f.tensors().empty())
    fail(BRISK_ERR_BAD_FORMAT, "'" + path + "' has no tensors (a vocabulary-only file); open it for tokenizing only");
  m->config_ = ModelConfig::from_gguf(f);
  m->config_.n_vocab = m->tokenizer_->n_vocab();
  m->weights_ = Weights::bind(f, m->config_);
  m->plan_ = plan_kernels(m->weights_, options.plan);
  return m;
}

std::string Model::main_weight_type() const {
  // The type holding the most matrix bytes names the file's precision.
  std::map<std::string, uint64_t> bytes_by_type;
  for (const gguf::TensorInfo& t : file_->tensors())
    if (t.n_dims >= 2) bytes_by_type[type_name(t.type)] += t.n_bytes;
  std::string main_type;
  uint64_t best = 0;
  for (auto& [name, b] : bytes_by_type)
    if (b > best) best = b, main_type = name;
  return main_type;
}

std::string Model::describe() const {
  const ModelConfig& c = config_;
  if (vocab_only_) return "vocabulary only (" + std::to_string(c.n_vocab) + " tokens)";
  const std::string main_type = main_weight_type();
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, %d layers, dim %d, %d heads (%d kv), ffn %d, vocab %d, %s, %.2f MB",
                c.arch_name.c_str(), c.n_layer, c.n_embd, c.n_head, c.n_head_kv, c.n_ff, c.n_vocab,
                main_type.c_str(), static_cast<double>(file_->file_size()) / 1e6);
  return buf;
}

}  // namespace brisk
