// SPDX-License-Identifier: MIT
// brisk_model_* and tokenization.
#include <string>
#include <vector>

#include "bundle/verify.h"
#include "guard.h"
#include "handles.h"
#include "tokenizer/chat_template.h"

using brisk::capi::checked;
using brisk::capi::copy_out;
using brisk::capi::copy_text_out;
using brisk::capi::guard;
using brisk::capi::guard_value;
using brisk::capi::guard_void;
using brisk::capi::require;

extern "C" {

static void fill_model_options(brisk_model_options* o) {
  if (!o) return;
  *o = brisk_model_options{};
  o->struct_size = sizeof(*o);
  o->log_level = BRISK_LOG_WARN;
}

brisk_status brisk_model_open(const char* path, const brisk_model_options* options, brisk_model** out) {
  return guard([&] {
    require(out, "out_model");
    *out = nullptr;
    require(path, "path");
    auto h = std::make_unique<brisk_model>();
    h->options = brisk::capi::merge_options(options, [](brisk_model_options* p) { brisk_model_options_init(p); });
    brisk::ModelOpenOptions mo;
    mo.vocab_only = h->options.vocab_only != 0;
    mo.map = brisk::capi::map_options_of(h->options);
    const brisk_model_options& o = h->options;
    if (o.plan_mode < BRISK_PLAN_DEFAULT || o.plan_mode > BRISK_PLAN_MEASURE)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "plan_mode " + std::to_string(o.plan_mode) + " is not a brisk_plan_mode");
    if (o.plan_threads < 0 || o.plan_threads > 4096)
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "plan_threads " + std::to_string(o.plan_threads) + " is out of range");
    switch (o.plan_mode) {
      case BRISK_PLAN_AUTO: mo.plan.mode = brisk::PlanMode::automatic; break;
      case BRISK_PLAN_FIXED: mo.plan.mode = brisk::PlanMode::fixed; break;
      case BRISK_PLAN_MEASURE: mo.plan.mode = brisk::PlanMode::measure; break;
      default: mo.plan.mode = brisk::default_plan_mode(); break;
    }
    if (o.plan_cache_dir) mo.plan.cache_dir = o.plan_cache_dir;
    mo.plan.n_threads = static_cast<int>(o.plan_threads);
    if (o.log_fn) {
      mo.plan.log = [&o](int level, const std::string& msg) {
        const brisk_log_level l = level <= 1 ? BRISK_LOG_WARN : BRISK_LOG_INFO;
        if (o.log_level >= l) o.log_fn(o.log_user_data, l, msg.c_str());
      };
    }
    h->model = brisk::Model::open(path, mo);
    // ---- conv: verify the embedded checksum manifest on request ----
    if (h->options.verify) brisk::bundle::verify_gguf_or_throw(h->model->file());
    // ---- end conv ----
    if (h->options.log_fn && h->options.log_level >= BRISK_LOG_INFO)
      h->options.log_fn(h->options.log_user_data, BRISK_LOG_INFO,
                        ("loaded " + std::string(path) + ": " + h->model->describe()).c_str());
    *out = h.release();
  });
}

// With sessions or engines still open, the model stays alive for them and
// is freed with the last; the caller's handle is closed at once.
void brisk_model_close(brisk_model* m) {
  guard_void([&] {
    if (!m) return;
    checked(m, "model");
    m->magic = brisk::capi::kMagicModelClosed;
    brisk::capi::release_model(m);
  });
}

int32_t brisk_model_n_vocab(const brisk_model* m) {
  return guard_value(0, [&] { return checked(m, "model")->model->config().n_vocab; });
}
int32_t brisk_model_n_ctx_train(const brisk_model* m) {
  return guard_value(0, [&] { return checked(m, "model")->model->config().n_ctx_train; });
}
int32_t brisk_model_token_bos(const brisk_model* m) {
  return guard_value(-1, [&] { return static_cast<int32_t>(checked(m, "model")->model->tokenizer().bos()); });
}
int32_t brisk_model_token_eos(const brisk_model* m) {
  return guard_value(-1, [&] { return static_cast<int32_t>(checked(m, "model")->model->tokenizer().eos()); });
}

brisk_status brisk_model_kernel_plan(const brisk_model* m, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    copy_text_out(m->model->kernel_plan().describe(), buf, cap, needed);
  });
}

brisk_status brisk_model_describe(const brisk_model* m, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    copy_text_out(m->model->describe(), buf, cap, needed);
  });
}

brisk_status brisk_model_weight_type(const brisk_model* m, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    copy_text_out(m->model->vocab_only() ? "" : m->model->main_weight_type(), buf, cap, needed);
  });
}

uint64_t brisk_model_file_size(const brisk_model* m) {
  return guard_value(uint64_t{0}, [&] { return static_cast<uint64_t>(checked(m, "model")->model->file().file_size()); });
}

uint64_t brisk_model_decode_bytes(const brisk_model* m) {
  return guard_value(uint64_t{0}, [&] {
    const brisk_model* c = checked(m, "model");
    return c->model->vocab_only() ? uint64_t{0} : c->model->weights().decode_bytes();
  });
}

brisk_status brisk_model_meta(const brisk_model* m, const char* key, char* buf, size_t cap, size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    require(key, "key");
    const brisk::gguf::Value* v = m->model->file().find(key);
    if (!v) brisk::fail(BRISK_ERR_NOT_FOUND, std::string("no metadata key '") + key + "'");
    copy_text_out(v->to_string(), buf, cap, needed);
  });
}

brisk_status brisk_tokenize(const brisk_model* m, const char* text, size_t len, uint32_t flags, int32_t* tokens,
                            size_t cap, size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    if (len > 0) require(text, "text");
    std::vector<int32_t> ids = m->model->tokenizer().encode(std::string_view(text ? text : "", len),
                                                            flags & BRISK_TOKENIZE_ADD_BOS,
                                                            flags & BRISK_TOKENIZE_PARSE_SPECIAL);
    copy_out(ids.data(), ids.size(), tokens, cap, needed);
  });
}

brisk_status brisk_token_to_piece(const brisk_model* m, int32_t token, uint32_t flags, char* buf, size_t cap,
                                  size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    if (token < 0 || token >= m->model->tokenizer().n_vocab())
      brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "token id " + std::to_string(token) + " is outside the vocabulary");
    copy_text_out(m->model->tokenizer().token_to_piece(token, flags & BRISK_PIECE_SPECIAL), buf, cap, needed);
  });
}

brisk_status brisk_detokenize(const brisk_model* m, const int32_t* tokens, size_t n, uint32_t flags, char* buf,
                              size_t cap, size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    if (n > 0) require(tokens, "tokens");
    const brisk::Tokenizer& tok = m->model->tokenizer();
    for (size_t i = 0; i < n; ++i)
      if (tokens[i] < 0 || tokens[i] >= tok.n_vocab())
        brisk::fail(BRISK_ERR_INVALID_ARGUMENT, "token id " + std::to_string(tokens[i]) + " is outside the vocabulary");
    const bool strip = (flags & BRISK_TOKENIZE_ADD_BOS) && n > 0 && tokens[0] == tok.bos();
    copy_text_out(tok.decode(tokens, n, strip), buf, cap, needed);
  });
}

brisk_status brisk_chat_render(const brisk_model* m, const char* template_name, const char* const* roles,
                               const char* const* contents, size_t n, int32_t add_assistant, char* buf, size_t cap,
                               size_t* needed) {
  brisk_chat_options o;
  brisk_chat_options_init(&o);
  o.template_name = template_name;
  o.add_assistant = add_assistant;
  return brisk_chat_render_ex(m, roles, contents, n, &o, buf, cap, needed);
}

brisk_status brisk_chat_render_ex(const brisk_model* m, const char* const* roles, const char* const* contents,
                                  size_t n, const brisk_chat_options* options, char* buf, size_t cap,
                                  size_t* needed) {
  return guard([&] {
    brisk::capi::checked(m, "model");
    const brisk_chat_options o =
        brisk::capi::merge_options(options, [](brisk_chat_options* p) { brisk_chat_options_init(p); });
    if (n > 0) {
      require(roles, "roles");
      require(contents, "contents");
    }
    const char* template_name = o.template_name;
    brisk::ChatFamily family = brisk::ChatFamily::UNKNOWN;
    if (template_name) {
      family = brisk::chat_family_from_name(template_name);
      if (family == brisk::ChatFamily::UNKNOWN)
        brisk::fail(BRISK_ERR_INVALID_ARGUMENT, std::string("unknown chat template '") + template_name +
                                                    "' (llama2, llama3, chatml, mistral, phi3)");
    } else {
      auto tmpl = m->model->file().opt_string("tokenizer.chat_template");
      if (!tmpl) brisk::fail(BRISK_ERR_UNSUPPORTED, "the model has no chat template; name one (e.g. chatml)");
      family = brisk::detect_chat_family(*tmpl);
      if (family == brisk::ChatFamily::UNKNOWN)
        brisk::fail(BRISK_ERR_UNSUPPORTED, "the model's chat template is not one brisk recognises; name one");
    }
    std::vector<brisk::ChatMessage> msgs;
    for (size_t i = 0; i < n; ++i) {
      require(roles[i], "a role");
      require(contents[i], "a content");
      msgs.push_back({roles[i], contents[i]});
    }
    if (!o.allow_control_tokens) brisk::check_chat_messages(m->model->tokenizer(), msgs);
    copy_text_out(brisk::render_chat(family, msgs, o.add_assistant != 0), buf, cap, needed);
  });
}

}  // extern "C"

extern "C" {
static void fill_chat_options(brisk_chat_options* o) {
  *o = brisk_chat_options{};
  o->struct_size = sizeof(*o);
  o->add_assistant = 1;
}

void brisk_chat_options_init_sized(brisk_chat_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_chat_options);
}

void brisk_model_options_init_sized(brisk_model_options* o, size_t size) {
  brisk::capi::init_sized(o, size, fill_model_options);
}
}  // extern "C"
