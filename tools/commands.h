// SPDX-License-Identifier: MIT
// Entry points of the subcommands; argv[0] is the subcommand's name.
#pragma once

namespace brisk::tools {
int cmd_run(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_verify(int argc, char** argv);
int cmd_pack(int argc, char** argv);
int cmd_unpack(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_ppl(int argc, char** argv);
int cmd_calibrate(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_batch(int argc, char** argv);
int cmd_doctor(int argc, char** argv);
int cmd_tune(int argc, char** argv);
}
