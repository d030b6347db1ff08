# A compiler cache shared by every clone on a machine: ccache's own folder (~/.cache/ccache, outside
# the clone), keyed so that the same source compiled in another folder hits. CI builds a fresh clone
# in another folder twice a run (plain and sanitized); with the cache a developer's build left, it
# compiles only what changed. A cold cache only costs the time of storing the objects.
#
# What makes another folder hit:
# - scripts/compile_cached.sh gives ccache the clone's paths relative to the build folder (ccache
#   leaves the precompiled header's -Xclang arguments absolute) and its base_dir, without the build
#   folder in the hash;
# - the precompiled headers embed their inputs (-fmodules-embed-all-files) and no timestamps: a
#   header restored from the cache names cmake_pch.hxx of the clone that made it, which clang would
#   otherwise need on disk ("could not find file ... referenced by AST file") when a file that
#   changed is compiled against it;
# - unity batches include their files by relative paths (torchscope_unity_build);
# - no compile definition holds the clone's path (the tests' and the CLI's folders are compiled in
#   one file each: tests/core/test_paths.cpp, tests/ui/gui_test_paths.cpp, app/*/..._options.cpp).
option(TORCHSCOPE_CCACHE "Compile through ccache when it is installed" ON)
if(TORCHSCOPE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(TORCHSCOPE_CCACHE_PROGRAM ccache)
  if(TORCHSCOPE_CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER "${PROJECT_SOURCE_DIR}/scripts/compile_cached.sh"
      "${PROJECT_SOURCE_DIR}" "${TORCHSCOPE_CCACHE_PROGRAM}")
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      list(APPEND CMAKE_CXX_COMPILE_OPTIONS_CREATE_PCH
        -Xclang -fno-pch-timestamp -Xclang -fmodules-embed-all-files)
    endif()
    message(STATUS "TorchScope: compiling through ${TORCHSCOPE_CCACHE_PROGRAM}")
  endif()
endif()
