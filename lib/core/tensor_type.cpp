// SPDX-License-Identifier: MIT
#include "core/tensor_type.h"

#include <algorithm>
#include <cctype>

namespace brisk {

namespace {
constexpr TypeTraits kUnknown{"unknown", 1, 0, false, false};

struct Entry {
  uint32_t id;
  TypeTraits tr;
};
// Block sizes and byte sizes follow ggml's type_traits table.
constexpr Entry kTypes[] = {
    {0, {"f32", 1, 4, true, true}},        {1, {"f16", 1, 2, true, true}},
    {2, {"q4_0", 32, 18, true, true}},     {3, {"q4_1", 32, 20, true, true}},
    {6, {"q5_0", 32, 22, true, false}},    {7, {"q5_1", 32, 24, true, false}},
    {8, {"q8_0", 32, 34, true, true}},     {9, {"q8_1", 32, 36, true, false}},
    {10, {"q2_k", 256, 84, true, false}},  {11, {"q3_k", 256, 110, true, false}},
    {12, {"q4_k", 256, 144, true, true}},  {13, {"q5_k", 256, 176, true, true}},
    {14, {"q6_k", 256, 210, true, true}},  {15, {"q8_k", 256, 292, true, false}},
    {16, {"iq2_xxs", 256, 66, true, false}}, {17, {"iq2_xs", 256, 74, true, false}},
    {18, {"iq3_xxs", 256, 98, true, false}}, {19, {"iq1_s", 256, 50, true, false}},
    {20, {"iq4_nl", 32, 18, true, false}},   {21, {"iq3_s", 256, 110, true, false}},
    {22, {"iq2_s", 256, 82, true, false}},   {23, {"iq4_xs", 256, 136, true, false}},
    {24, {"i8", 1, 1, true, false}},       {25, {"i16", 1, 2, true, false}},
    {26, {"i32", 1, 4, true, false}},      {27, {"i64", 1, 8, true, false}},
    {28, {"f64", 1, 8, true, false}},      {29, {"iq1_m", 256, 56, true, false}},
    {30, {"bf16", 1, 2, true, true}},
};
}  // namespace

const TypeTraits& type_traits(uint32_t id) {
  for (const Entry& e : kTypes)
    if (e.id == id) return e.tr;
  return kUnknown;
}

bool parse_type_name(const std::string& s, TensorType* out) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const Entry& e : kTypes) {
    if (l == e.tr.name) {
      *out = static_cast<TensorType>(e.id);
      return true;
    }
  }
  return false;
}

}  // namespace brisk
