#===- AutoparAddLibrary.cmake - helpers for autopar libraries -------------===#
#
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===-----------------------------------------------------------------------===#

# add_autopar_library(name sources... [DEPENDS ...] [LINK_LIBS ...]
#                     [MLIR_LIBS ...])
# One library per layer. MLIR_LIBS are linked through libMLIR.so
# (mlir_target_link_libraries), since add_mlir_library ignores
# MLIR_LINK_MLIR_DYLIB for LINK_LIBS.
function(add_autopar_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK_LIBS;MLIR_LIBS" ${ARGN})
  add_mlir_library(${name} ${ARG_UNPARSED_ARGUMENTS}
    DEPENDS ${ARG_DEPENDS}
    LINK_LIBS PUBLIC ${ARG_LINK_LIBS}
    DISABLE_INSTALL)
  if(ARG_MLIR_LIBS)
    mlir_target_link_libraries(${name} PUBLIC ${ARG_MLIR_LIBS})
  endif()
endfunction()
