# SPDX-License-Identifier: MIT
# brisk_newest_function_node(MAP_TEXT NODE_VAR OFFSET_VAR): the newest node
# of a brisk.map that lists functions ("BRISK_0.5") and where it starts in
# MAP_TEXT. A minor that only grew option structs has an empty node, which
# no program can come to need, so refusal tests go by this one.
function(brisk_newest_function_node map node_var offset_var)
  string(REGEX MATCHALL "\nBRISK_[0-9]+\\.[0-9]+[ \t]*{[^}]*brisk_[a-z]" nodes "${map}")
  list(LENGTH nodes n)
  if(n EQUAL 0)
    message(FATAL_ERROR "brisk.map: no version node lists a function")
  endif()
  list(GET nodes -1 newest)
  string(FIND "${map}" "${newest}" offset)
  string(REGEX MATCH "BRISK_[0-9]+\\.[0-9]+" node "${newest}")
  set(${node_var} ${node} PARENT_SCOPE)
  set(${offset_var} ${offset} PARENT_SCOPE)
endfunction()
