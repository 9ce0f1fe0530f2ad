# SPDX-License-Identifier: MIT
# cmake -DIN=brisk.map -DOUT=previous.map -P previous_map.cmake
# Writes brisk.map without its last version node (the newest ABI minor).
file(READ ${IN} map)
string(FIND "${map}" "\nBRISK_" last REVERSE)
if(last LESS 0)
  message(FATAL_ERROR "${IN}: no version node")
endif()
string(SUBSTRING "${map}" 0 ${last} previous)
file(WRITE ${OUT} "${previous}\n")
