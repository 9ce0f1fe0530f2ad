// SPDX-License-Identifier: MIT
// Chat template families: detection from real templates and rendering.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "test_data.h"
#include "tokenizer/chat_template.h"
#include "tokenizer_util.h"

using namespace brisk;

namespace {

// Abbreviated but verbatim-in-spirit templates of each family.
const char* kLlama2 =
    "{% if messages[0]['role'] == 'system' %}{% set system_message = '<<SYS>>\\n' + messages[0]['content'] | trim + "
    "'\\n<</SYS>>\\n\\n' %}{% endif %}{% for message in loop_messages %}{% if message['role'] == 'user' %}"
    "{{ bos_token + '[INST] ' + content | trim + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ ' ' + content | trim + ' ' + eos_token }}{% endif %}{% endfor %}";
const char* kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
const char* kChatml =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou "
    "are a helpful assistant<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const char* kMistral =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + "
    "' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% endif %}{% endfor %}";

const std::vector<ChatMessage> kChat = {
    {"system", "Be brief."}, {"user", "Hi!"}, {"assistant", "Hello."}, {"user", "2+2?"}};

}  // namespace

TEST_CASE("Chat family detection", "[tokenizer]") {
  CHECK(detect_chat_family(kLlama2) == ChatFamily::LLAMA2);
  CHECK(detect_chat_family(kLlama3) == ChatFamily::LLAMA3);
  CHECK(detect_chat_family(kChatml) == ChatFamily::CHATML);
  CHECK(detect_chat_family(kMistral) == ChatFamily::MISTRAL);
  CHECK(detect_chat_family("{{ messages }}") == ChatFamily::UNKNOWN);
  CHECK(detect_chat_family("") == ChatFamily::UNKNOWN);
  for (ChatFamily f : {ChatFamily::LLAMA2, ChatFamily::LLAMA3, ChatFamily::CHATML, ChatFamily::MISTRAL, ChatFamily::PHI3})
    CHECK(chat_family_from_name(chat_family_name(f)) == f);
  CHECK(chat_family_from_name("jinja") == ChatFamily::UNKNOWN);
}

TEST_CASE("Chat rendering per family", "[tokenizer]") {
  CHECK(render_chat(ChatFamily::LLAMA2, kChat, true) ==
        "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi! [/INST] Hello. </s><s>[INST] 2+2? [/INST]");
  CHECK(render_chat(ChatFamily::LLAMA3, kChat, true) ==
        "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(render_chat(ChatFamily::CHATML, kChat, false) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n");
  CHECK(render_chat(ChatFamily::CHATML, {{"user", "x"}}, true) == "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render_chat(ChatFamily::MISTRAL, kChat, true) == "[INST] Be brief.\n\nHi! [/INST]Hello.</s>[INST] 2+2? [/INST]");
  CHECK(render_chat(ChatFamily::PHI3, {{"user", "Hi"}}, true) == "<|user|>\nHi<|end|>\n<|assistant|>\n");
  CHECK(render_chat(ChatFamily::LLAMA3, {}, true) == "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK_THROWS_AS(render_chat(ChatFamily::UNKNOWN, kChat, true), Error);
}

TEST_CASE("Chat templates from vocabularies tokenize with their special tokens", "[tokenizer]") {
  {
    BRISK_TEST_FILE(path, "models/vocab-tests/ggml-vocab-phi-3.gguf");
    gguf::File f(path);
    auto tok = Tokenizer::from_gguf(f);
    REQUIRE(!tok->chat_template().empty());
    CHECK(detect_chat_family(tok->chat_template()) == ChatFamily::PHI3);
    auto ids = tok->encode(render_chat(ChatFamily::PHI3, {{"user", "Hi"}}, true), true, true);
    REQUIRE(ids.size() > 3);
    CHECK(ids[0] == tok->bos());
    CHECK(ids[1] == tok->find_token("<|user|>"));
    CHECK(std::count(ids.begin(), ids.end(), tok->find_token("<|end|>")) == 1);
    CHECK(tok->is_eog(tok->find_token("<|end|>")));
  }
  {
    BRISK_TEST_FILE(path, "models/vocab-tests/ggml-vocab-llama-bpe.gguf");
    gguf::File f(path);
    auto tok = Tokenizer::from_gguf(f);
    auto ids = tok->encode(render_chat(ChatFamily::LLAMA3, kChat, true), true, true);
    CHECK(ids[0] == 128000);
    CHECK(ids[1] == 128006);
    CHECK(std::count(ids.begin(), ids.end(), 128009) == 4);
    CHECK(ids.back() != 128009);
  }
}
