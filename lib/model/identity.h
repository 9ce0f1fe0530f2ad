// SPDX-License-Identifier: MIT
// A model file's identity: what a saved state, a resumable batch or a prompt
// cache is tied to, so one made with another model is refused.
#pragma once
#include <string>

#include "gguf/gguf.h"

namespace brisk {

// 32 hex digits: XXH3-128 over the GGUF header (metadata and tensor table,
// which with an embedded manifest holds every tensor's checksum), the file
// size and 64 blocks of 4 KiB sampled evenly over the tensor data. Cheap
// (reads ~256 KiB) yet it tells apart files that share a header, such as
// synthetic models made with different seeds.
std::string model_identity(const gguf::File& file);

}  // namespace brisk
