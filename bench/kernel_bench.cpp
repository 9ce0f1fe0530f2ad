// SPDX-License-Identifier: MIT
// Developer micro-benchmark of one matmul kernel, single thread, no engine:
// how many multiply-adds per second a weight type's gemm reaches for a given
// number of activation columns, and the weight-read bandwidth that implies.
// Not a test and not part of the product; `brisk bench` is what users run.
//
//   brisk_kernel_bench [type=q4_0] [k=2048] [rows=5632] [cols=1,2,4,8,16] [reps=20] [--variant NAME]
//     one matrix of random weights, row-major and packed (the packed kernel
//     the named packed variant, kernels/variants.h, if given).
//   brisk_kernel_bench --model FILE.gguf [cols=1,8] [reps=3] [copy=0|1|2]
//                      [--threads N] [--variant LIST]
//     every weight matrix of the file in order (one forward pass's matmuls),
//     read from the mapping, from an anonymous huge-page copy (copy=1) or,
//     as the engine reads them, repacked where that pays (copy=2).
//     --threads N: N pinned threads, each walking its contiguous part of
//     every matrix in pieces of 16 row groups, as the engine's matmuls do.
//     --variant LIST: named kernel variants (kernels/variants.h) instead of
//     the defaults, timed in turns repetition by repetition. LIST is
//     comma-separated; each entry is one or more '+'-joined names, a full
//     name ("avx512.packed.q4_0.t0") or a suffix (".t0": that suffix of
//     every type's default packed name, where such a variant exists);
//     "default" is the engine's choice. Matrices without a match keep it.
//   brisk_kernel_bench --attend [positions=600] [head_dim=64] [group=8] [kv_heads=4] [reps=400]
//     the fused attention (kernels/vec.h, attend) of kv_heads KV heads with
//     `group` query heads each over an F16 cache in L2, one thread; the
//     median time of one step's kv_heads calls (BRISK_ISA picks the ISA).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>

#include <cstring>
#include <exception>

#include "core/tensor_type.h"
#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "kernels/packed.h"
#include "kernels/variants.h"
#include "kernels/vec.h"
#include "quant/quant.h"
#include "threads/thread_pool.h"

using namespace brisk;

static const char kUsage[] =
    "usage: brisk_kernel_bench [type=q4_0] [k=2048] [rows=5632] [cols=1,2,4,8,16] [reps=20] [--variant NAME]\n"
    "       brisk_kernel_bench --model FILE.gguf [cols=1,8] [reps=3] [copy=0|1|2] [--threads N]\n"
    "                          [--variant NAME[+NAME...][,...]]\n"
    "       brisk_kernel_bench --attend [positions=600] [head_dim=64] [group=8] [kv_heads=4] [reps=400]\n"
    "arguments are positional: \"1,8\", not \"cols=1,8\"\n";

[[noreturn]] static void usage_error(const std::string& what) {
  std::fprintf(stderr, "brisk_kernel_bench: %s\n%s", what.c_str(), kUsage);
  std::exit(2);
}

// A positive count, or the usage and exit 2 (atoi would turn "cols=8" into 0).
static int parse_count(const std::string& arg, const char* what) {
  char* end = nullptr;
  const long v = std::strtol(arg.c_str(), &end, 10);
  if (arg.empty() || *end != '\0' || v <= 0 || v > (1 << 24)) usage_error(std::string("bad ") + what + " '" + arg + "'");
  return static_cast<int>(v);
}

static std::vector<int> parse_cols(const std::string& arg) {
  std::vector<int> v;
  std::stringstream ss(arg);
  for (std::string s; std::getline(ss, s, ',');) v.push_back(parse_count(s, "column count"));
  if (v.empty()) usage_error("no column counts");
  for (int c : v)
    if (c > 512) usage_error("at most 512 columns (a prompt step)");
  return v;
}

static std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);) v.push_back(part);
  return v;
}

// One matrix of the file, in its GGUF rows and, where packable, packed.
struct BenchMatrix {
  TensorType type;
  int64_t k;
  int rows;
  const uint8_t* w_rows;
  const uint8_t* w_packed;  // nullptr: no packed copy
  size_t group_bytes;
};

// What one entry of --variant (or the default) runs for a matrix.
struct Choice {
  const kernels::MatmulKernel* kern;
  bool packed;
};

// The kernel `entry` names for m's type, else the engine's (packed where a
// packed copy exists).
static Choice choose(const BenchMatrix& m, const std::string& entry) {
  const kernels::MatmulKernel* pk = m.w_packed ? kernels::packed_matmul_kernel(m.type) : nullptr;
  Choice c = pk ? Choice{pk, true} : Choice{&kernels::matmul_kernel(m.type), false};
  if (entry == "default") return c;
  const std::vector<kernels::KernelVariant> vs = kernels::matmul_variants(m.type);
  for (const std::string& name : split(entry, '+')) {
    std::string full = name;
    if (!name.empty() && name[0] == '.') {
      if (!pk) continue;
      full = std::string(kernels::isa_name(kernels::active_isa())) + ".packed." + type_name(m.type) + name;
    }
    if (const kernels::KernelVariant* v = kernels::find_variant(vs, full.c_str())) {
      if (v->packed && !m.w_packed) usage_error("variant " + full + " reads packed weights: use copy=2");
      return {v->kernel, v->packed};
    }
  }
  return c;
}

static int model_mode(int argc, char** argv) try {
  // Options anywhere after the file; the rest are positional.
  std::vector<std::string> pos;
  int n_threads = 1;
  std::string variant_arg = "default";
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      n_threads = parse_count(argv[++i], "thread count");
    } else if (a == "--variant" && i + 1 < argc) {
      variant_arg = argv[++i];
    } else {
      pos.push_back(a);
    }
  }
  gguf::File f(argv[2]);
  const std::vector<int> cols = parse_cols(pos.size() > 0 ? pos[0] : "1,8");
  const int reps = pos.size() > 1 ? parse_count(pos[1], "repetitions") : 3;
  const std::string copy_arg = pos.size() > 2 ? pos[2] : "0";
  if (copy_arg != "0" && copy_arg != "1" && copy_arg != "2") usage_error("copy must be 0, 1 or 2");
  const int copy = copy_arg[0] - '0';
  const std::vector<std::string> entries = split(variant_arg, ',');
  if (entries.empty()) usage_error("no variants");
  std::vector<BenchMatrix> ms;
  size_t total_rows = 0;
  for (const auto& t : f.tensors())
    if (t.n_dims == 2 && t.name != "token_embd.weight") {
      ms.push_back({t.type, t.ne[0], static_cast<int>(t.n_rows()), t.data, nullptr, 0});
      total_rows += t.n_bytes;
    }
  // Anonymous memory on huge pages, 64-byte aligned spans.
  auto huge_alloc = [](size_t bytes) {
    void* p = mmap(nullptr, bytes + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) usage_error("cannot allocate the copy");
    auto* b = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + (2 << 20) - 1) & ~uintptr_t((2 << 20) - 1));
    madvise(b, bytes, MADV_HUGEPAGE);
    return b;
  };
  auto groups = [](const BenchMatrix& m) { return (m.rows + kernels::kPackRows - 1) / kernels::kPackRows; };
  if (copy == 1) {
    uint8_t* buf = huge_alloc(total_rows);
    size_t off = 0;
    for (BenchMatrix& m : ms) {
      const size_t n = row_bytes(m.type, m.k) * m.rows;
      std::memcpy(buf + off, m.w_rows, n);
      m.w_rows = buf + off;
      off += n;
    }
  } else if (copy == 2) {
    // The engine's form: weights repacked (kernels/packed.h) where this ISA
    // has a packed kernel, each matrix 64-byte aligned on huge pages.
    auto packed_span = [&](const BenchMatrix& m) {
      return (kernels::packed_group_bytes(m.type, m.k) * groups(m) + 63) & ~size_t{63};
    };
    size_t need = 0;
    for (const BenchMatrix& m : ms)
      if (kernels::packed_matmul_kernel(m.type)) need += packed_span(m);
    uint8_t* buf = huge_alloc(need);
    size_t off = 0;
    for (BenchMatrix& m : ms) {
      if (!kernels::packed_matmul_kernel(m.type)) continue;
      const size_t gb = kernels::packed_group_bytes(m.type, m.k), stride = row_bytes(m.type, m.k);
      for (int g = 0; g < groups(m); ++g)
        kernels::pack_row_group(m.type, m.w_rows + stride * g * kernels::kPackRows, stride,
                                std::min(kernels::kPackRows, m.rows - g * kernels::kPackRows), m.k, buf + off + gb * g);
      m.w_packed = buf + off;
      m.group_bytes = gb;
      off += packed_span(m);
    }
  }
  // Per entry, each matrix's kernel, and the bytes one pass reads.
  std::vector<std::vector<Choice>> plan(entries.size());
  std::vector<size_t> bytes(entries.size(), 0);
  for (size_t e = 0; e < entries.size(); ++e)
    for (const BenchMatrix& m : ms) {
      plan[e].push_back(choose(m, entries[e]));
      bytes[e] += plan[e].back().packed ? m.group_bytes * groups(m) : row_bytes(m.type, m.k) * m.rows;
    }
  double macs = 0;
  for (const BenchMatrix& m : ms) macs += static_cast<double>(m.k) * m.rows;
  ThreadPoolOptions po;
  po.n_threads = n_threads;
  po.pin_caller = true;
  ThreadPool pool(po);
  std::printf("%zu matrices, %.1f MiB, %s, %s\n", ms.size(), bytes[0] / 1048576.0,
              copy == 2 ? "packed huge-page copy" : copy ? "anonymous huge-page copy" : "mapped file",
              pool.describe().c_str());
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int ncols : cols) {
    std::vector<std::vector<double>> times(entries.size());
    std::vector<float> x(static_cast<size_t>(16384) * ncols), out(static_cast<size_t>(32000) * ncols);
    for (auto& v : x) v = nd(rng);
    std::vector<uint8_t> act;
    for (int i = 0; i < reps + 1; ++i)
      for (size_t e = 0; e < entries.size(); ++e) {
        double t = 0;
        for (size_t j = 0; j < ms.size(); ++j) {
          const BenchMatrix& m = ms[j];
          const Choice& ch = plan[e][j];
          const kernels::MatmulKernel& kern = *ch.kern;
          const size_t astride = kernels::act_column_bytes(kern, m.k);
          act.resize(astride * ncols);
          for (int c = 0; c < ncols; ++c) kern.quantize_act(x.data() + c * m.k, act.data() + astride * c, m.k);
          const uint8_t* actp = kern.act_type == TensorType::F32 ? reinterpret_cast<const uint8_t*>(x.data()) : act.data();
          const size_t as = kern.act_type == TensorType::F32 ? m.k * sizeof(float) : astride;
          const int ng = groups(m);
          // Thread th's contiguous part of the row groups, in pieces of 16.
          auto part = [&](int64_t, int th) {
            const int g1 = static_cast<int>(static_cast<int64_t>(ng) * (th + 1) / n_threads);
            for (int g = static_cast<int>(static_cast<int64_t>(ng) * th / n_threads); g < g1; g += 16) {
              const int r0 = g * kernels::kPackRows, nr = std::min(m.rows, std::min(g1, g + 16) * kernels::kPackRows) - r0;
              const uint8_t* w = ch.packed ? m.w_packed + static_cast<size_t>(g) * m.group_bytes
                                           : m.w_rows + row_bytes(m.type, m.k) * r0;
              kern.gemm(m.k, w, ch.packed ? m.group_bytes : row_bytes(m.type, m.k), nr, actp, as, ncols,
                        out.data() + r0, m.rows);
            }
          };
          const auto t0 = std::chrono::steady_clock::now();
          pool.parallel_for(n_threads, part);
          t += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        if (i > 0) times[e].push_back(t);
      }
    for (size_t e = 0; e < entries.size(); ++e) {
      std::vector<double>& ts = times[e];
      std::sort(ts.begin(), ts.end());
      const double t = ts[ts.size() / 2];
      std::printf("cols %3d %-28s %8.1f ms/pass  %7.1f GMAC/s  %6.1f GB/s (%.1f-%.1f)  %.1f tok/s-equiv\n", ncols,
                  entries[e].c_str(), t * 1e3, macs * ncols / t / 1e9, bytes[e] / t / 1e9, bytes[e] / ts.back() / 1e9,
                  bytes[e] / ts.front() / 1e9, ncols / t);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "brisk_kernel_bench: %s\n", e.what());
  return 1;
}

static int attend_mode(int argc, char** argv) {
  const int n_pos = argc > 2 ? parse_count(argv[2], "positions") : 600;
  const int hd = argc > 3 ? parse_count(argv[3], "head_dim") : 64;
  const int group = argc > 4 ? parse_count(argv[4], "group") : 8;
  const int kv_heads = argc > 5 ? parse_count(argv[5], "kv_heads") : 4;
  const int reps = argc > 6 ? parse_count(argv[6], "repetitions") : 400;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  const size_t row = row_bytes(TensorType::F16, hd);
  std::vector<uint8_t> k(row * n_pos * kv_heads), v(row * n_pos * kv_heads);
  std::vector<float> tmp(hd);
  for (size_t r = 0; r < static_cast<size_t>(n_pos) * kv_heads; ++r) {
    for (auto& x : tmp) x = nd(rng);
    quant::quantize_row(TensorType::F16, tmp.data(), k.data() + r * row, hd);
    for (auto& x : tmp) x = nd(rng);
    quant::quantize_row(TensorType::F16, tmp.data(), v.data() + r * row, hd);
  }
  std::vector<float> q(static_cast<size_t>(group) * kv_heads * hd), out(q.size());
  for (auto& x : q) x = nd(rng);
  std::vector<float> scores(kernels::attend_scores_floats(group, n_pos)), rowbuf(hd),
      vrows(static_cast<size_t>(n_pos) * hd);
  const kernels::VecKernels& vk = kernels::vec_kernels();
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int h = 0; h < kv_heads; ++h) {
      kernels::AttendArgs a{q.data() + static_cast<size_t>(h) * group * hd,
                            group,
                            hd,
                            n_pos,
                            1.0f / std::sqrt(static_cast<float>(hd)),
                            k.data() + static_cast<size_t>(h) * n_pos * row,
                            row,
                            TensorType::F16,
                            v.data() + static_cast<size_t>(h) * n_pos * row,
                            row,
                            TensorType::F16,
                            scores.data(),
                            rowbuf.data(),
                            vrows.data(),
                            out.data() + static_cast<size_t>(h) * group * hd};
      kernels::attend(vk, a);
    }
    us.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e6);
  }
  std::sort(us.begin(), us.end());
  double check = 0;
  for (float x : out) check += x;
  std::printf("attend isa=%s positions=%d head_dim=%d group=%d kv_heads=%d: %.1f us per step (median of %d), "
              "%.2f ns per position and KV head (checksum %.4g)\n",
              kernels::isa_name(kernels::active_isa()), n_pos, hd, group, kv_heads, us[us.size() / 2], reps,
              us[us.size() / 2] * 1e3 / n_pos / kv_heads, check);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "--model") return model_mode(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "--attend") return attend_mode(argc, argv);
  // --variant NAME (anywhere): the packed kernel is that variant instead.
  std::string variant;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--variant") {
      variant = argv[i + 1];
      for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  const std::string type_name = argc > 1 ? argv[1] : "q4_0";
  if (type_name == "-h" || type_name == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const int64_t k = argc > 2 ? parse_count(argv[2], "k") : 2048;
  const int rows = argc > 3 ? parse_count(argv[3], "rows") : 5632;
  const std::string cols_arg = argc > 4 ? argv[4] : "1,2,4,8,16";
  const int reps = argc > 5 ? parse_count(argv[5], "repetitions") : 20;
  TensorType type;
  if (!parse_type_name(type_name, &type)) {
    std::fprintf(stderr, "unknown type %s\n", type_name.c_str());
    return 1;
  }
  if (k % type_traits(type).block_size != 0)
    usage_error("k must be a multiple of " + std::to_string(type_traits(type).block_size) + " for " + type_name);
  const kernels::MatmulKernel& kern = kernels::matmul_kernel(type);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  const size_t wrow = row_bytes(type, k);
  std::vector<uint8_t> w(wrow * rows);
  std::vector<float> tmp(k);
  for (int r = 0; r < rows; ++r) {
    for (auto& v : tmp) v = nd(rng);
    quant::quantize_row(type, tmp.data(), w.data() + wrow * r, k);
  }
  const std::vector<int> col_list = parse_cols(cols_arg);
  std::printf("%s isa=%s k=%lld rows=%d (%.1f MiB)\n", type_name.c_str(), kernels::isa_name(kernels::active_isa()),
              static_cast<long long>(k), rows, w.size() / 1048576.0);
  // Packed copy of the same rows, when this ISA has a packed kernel.
  const kernels::MatmulKernel* pk = kernels::packed_matmul_kernel(type);
  if (!variant.empty()) {
    const std::vector<kernels::KernelVariant> vs = kernels::matmul_variants(type);
    const kernels::KernelVariant* v = kernels::find_variant(vs, variant.c_str());
    if (!v || !v->packed) usage_error("no packed variant " + variant + " for " + type_name);
    pk = v->kernel;
    std::printf("packed kernel: %s\n", v->name);
  }
  std::vector<uint8_t> wp;
  size_t gbytes = 0;
  if (pk) {
    gbytes = kernels::packed_group_bytes(type, k);
    const int ngroups = (rows + kernels::kPackRows - 1) / kernels::kPackRows;
    wp.resize(gbytes * ngroups + 64);
    for (int g = 0; g < ngroups; ++g)
      kernels::pack_row_group(type, w.data() + wrow * g * kernels::kPackRows, wrow,
                              std::min(kernels::kPackRows, rows - g * kernels::kPackRows), k, wp.data() + gbytes * g);
  }
  for (int variant = 0; variant < (pk ? 2 : 1); ++variant) {
    const kernels::MatmulKernel& kn = variant ? *pk : kern;
    const uint8_t* wd = variant ? wp.data() : w.data();
    const size_t ws = variant ? gbytes : wrow;
    std::printf("%s\n", variant ? "packed" : "row-major");
    for (int ncols : col_list) {
      const size_t astride = kernels::act_column_bytes(kn, k);
      std::vector<uint8_t> act(astride * ncols);
      for (int c = 0; c < ncols; ++c) {
        for (auto& v : tmp) v = nd(rng);
        kn.quantize_act(tmp.data(), act.data() + astride * c, k);
      }
      std::vector<float> out(static_cast<size_t>(rows) * ncols);
      std::vector<double> times;
      for (int i = 0; i < reps + 2; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        kn.gemm(k, wd, ws, rows, act.data(), astride, ncols, out.data(), rows);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i >= 2) times.push_back(s);
      }
      std::sort(times.begin(), times.end());
      const double t = times[times.size() / 2];
      std::printf("cols %3d: %8.3f ms  %7.1f GMAC/s  %6.1f GB/s weights\n", ncols, t * 1e3,
                  static_cast<double>(k) * rows * ncols / t / 1e9, w.size() / t / 1e9);
    }
  }
  return 0;
}
