# SPDX-License-Identifier: Apache-2.0
# Target helpers. Every directory under src/ that holds sources is exactly one static library,
# gpusched::<path with _>, e.g. src/plugins/gpu -> gpusched::plugins_gpu. Include paths start at
# the repository root: #include "src/framework/plugin.h".

add_library(gpusched_warnings INTERFACE)
target_compile_options(gpusched_warnings INTERFACE -Wall -Wextra -Wno-missing-field-initializers)
if(GPUSCHED_WERROR)
  target_compile_options(gpusched_warnings INTERFACE -Werror)
endif()

# gpusched_library(NAME SRCS ... [DEPS ...] [PUBLIC_DEPS ...])
# DEPS are PRIVATE; PUBLIC_DEPS are the targets whose types appear in this target's headers.
function(gpusched_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(gpusched_${name} STATIC ${ARG_SRCS})
  add_library(gpusched::${name} ALIAS gpusched_${name})
  target_include_directories(gpusched_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(gpusched_${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS} gpusched_warnings)
endfunction()

# gpusched_test(NAME SRCS ... [DEPS ...]) -- one GoogleTest binary, one ctest entry, label "unit".
function(gpusched_test name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  if(NOT GPUSCHED_BUILD_TESTS)
    return()
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main gpusched_warnings)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit
    ENVIRONMENT "GPUSCHED_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# gpusched_bench(NAME SRCS ... [DEPS ...])
function(gpusched_bench name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  find_package(benchmark REQUIRED)
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark gpusched_warnings)
endfunction()
