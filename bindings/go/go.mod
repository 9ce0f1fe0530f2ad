// Go binding of brisk, a CPU inference engine for quantized Llama-family
// models: inference (models, sessions, engines) and the whole toolchain
// (convert, quantize, calibrate, verify, pack, perplexity, compare) over
// libbrisk's C API. No dependencies outside the standard library.
//
// License: MIT (the LICENSE file at the top of the brisk repository).
// The module path becomes the repository's import path when brisk is
// published; until then, use it with a replace directive (README.md).
module brisk/bindings/go

go 1.19
