# torchscope_unity_build(TARGET): the target's C++ files compiled eight at a time, in the order the
# target lists them (CMake's UNITY_BUILD batching). The batches are written here rather than by
# CMake's UNITY_BUILD, whose batch files include each file by its absolute path: the same batch in
# another clone would then be another file to the compiler cache. Here a batch includes its files by
# their paths relative to the batch, the same in every clone (cmake/compiler_cache.cmake).
# Runs when the folder that made the target is done, so that files added to it later are batched
# too. A file keeps its own compile when it has its own definitions, options, flags or include
# folders, or SKIP_UNITY_BUILD_INCLUSION (as CMake's unity builds do).
function(torchscope_unity_build target)
  if(TORCHSCOPE_UNITY_BUILD)
    cmake_language(EVAL CODE "cmake_language(DEFER CALL torchscope_write_unity_batches [[${target}]])")
  endif()
endfunction()

function(torchscope_write_unity_batches target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(batch_dir "${binary_dir}/${target}_unity")
  set(batch "")
  set(count 0)
  set(index 0)
  set(batched "")
  foreach(source IN LISTS sources)
    if(source MATCHES "\\$<" OR NOT source MATCHES "\\.(cpp|cc|cxx)$")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${source_dir}" NORMALIZE OUTPUT_VARIABLE path)
    set(own "")
    foreach(property SKIP_UNITY_BUILD_INCLUSION COMPILE_DEFINITIONS COMPILE_OPTIONS COMPILE_FLAGS
        INCLUDE_DIRECTORIES SKIP_PRECOMPILE_HEADERS GENERATED HEADER_FILE_ONLY)
      get_source_file_property(value "${path}" TARGET_DIRECTORY ${target} ${property})
      if(value)
        set(own "${property}")
      endif()
    endforeach()
    if(own)
      continue()
    endif()
    file(RELATIVE_PATH relative "${batch_dir}" "${path}")
    string(APPEND batch "#include \"${relative}\"\n")
    list(APPEND batched "${path}")
    math(EXPR count "${count} + 1")
    if(count EQUAL 8)
      torchscope_write_unity_batch(${target} "${batch_dir}" ${index} "${batch}")
      math(EXPR index "${index} + 1")
      set(batch "")
      set(count 0)
    endif()
  endforeach()
  if(count GREATER 0)
    torchscope_write_unity_batch(${target} "${batch_dir}" ${index} "${batch}")
  endif()
  if(batched)
    set_source_files_properties(${batched} TARGET_DIRECTORY ${target} PROPERTIES HEADER_FILE_ONLY ON)
  endif()
endfunction()

function(torchscope_write_unity_batch target batch_dir index content)
  set(file "${batch_dir}/unity_${index}.cpp")
  # Rewritten only when its content changes (file(CONFIGURE)): an unchanged batch is not recompiled.
  file(CONFIGURE OUTPUT "${file}" CONTENT "/* ${target}'s unity batch ${index}, written by cmake/unity_batches.cmake */\n${content}" @ONLY)
  target_sources(${target} PRIVATE "${file}")
endfunction()
