# SPDX-License-Identifier: MIT
# cmake -DIN=brisk.map -DOUT=previous.map -P previous_map.cmake
# Writes brisk.map without its newest node that lists functions (and the
# empty nodes after it): what the libbrisk before that minor exported.
include(${CMAKE_CURRENT_LIST_DIR}/map_nodes.cmake)
file(READ ${IN} map)
brisk_newest_function_node("${map}" node last)
string(SUBSTRING "${map}" 0 ${last} previous)
file(WRITE ${OUT} "${previous}\n")
