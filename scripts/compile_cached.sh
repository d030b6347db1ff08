#!/usr/bin/env bash
# The compiler launcher of TorchScope's builds (CMAKE_CXX_COMPILER_LAUNCHER, set by
# cmake/compiler_cache.cmake): runs the compile through ccache so that the same source compiled in
# another clone, in another folder, is a cache hit.
#   compile_cached.sh SOURCE_DIR CCACHE COMPILER ARGS...
# ccache makes the paths under its base_dir relative, but not the ones after -Xclang (the
# precompiled header CMake passes as -Xclang -include -Xclang /clone/build/.../cmake_pch.hxx), so
# every argument that is a path inside SOURCE_DIR is made relative to the build folder here; the
# compiler is given the same files.
source_dir=$1
ccache=$2
shift 2
args=("$@")
if [[ $PWD == "$source_dir"/* ]]; then
  up=${PWD#"$source_dir"/}
  up=${up//[!\/]/}
  up=${up//\//../}../
  for i in "${!args[@]}"; do
    [[ ${args[i]} == "$source_dir"/* ]] && args[i]=$up${args[i]#"$source_dir"/}
  done
fi
export CCACHE_BASEDIR=$source_dir
# The build folder differs between clones: it is not part of the hash (debug information keeps the
# folder it was compiled in, which only a debugger reading the sources looks at).
export CCACHE_NOHASHDIR=1
# A restored precompiled header is the same file as the one it was made from (its inputs are
# embedded, see compiler_cache.cmake); the clone's files are newer than the compile's start only
# when they were edited during the build.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Both builds of a run (plain and sanitized) with their precompiled headers fit in 16 GB.
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-16G}
exec "$ccache" "${args[@]}"
