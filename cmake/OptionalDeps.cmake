# Optional parts: AUTO builds them when found, ON insists, OFF skips.

function(loom_optional name found)
  if(LOOM_WITH_${name} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "LOOM_WITH_${name}=ON but it was not found")
  endif()
  if(LOOM_WITH_${name} STREQUAL "OFF")
    set(LOOM_HAVE_${name} OFF PARENT_SCOPE)
  else()
    if(${found})
      set(LOOM_HAVE_${name} ON PARENT_SCOPE)
    else()
      set(LOOM_HAVE_${name} OFF PARENT_SCOPE)
    endif()
  endif()
endfunction()

set(_cuda_found OFF)
if(NOT LOOM_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(_cuda_found ON)
    endif()
  endif()
endif()
loom_optional(CUDA _cuda_found)
if(LOOM_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  # C++20 like the host code (codec.h uses defaulted comparisons). CMake 3.25
  # does not know nvcc 13's C++20 flag, and CUDA targets inherit CXX_STANDARD
  # 20, so name the flag once here for every directory with CUDA sources.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
endif()

# A static library of device kernels: C++20 like the host code, and -Werror on
# nvcc's host side only (the device side stays at nvcc's defaults).
function(loom_cuda_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LINK")
  add_library(${name} STATIC ${arg_SOURCES})
  target_link_libraries(${name} PUBLIC ${arg_LINK} CUDA::cudart_static)
  target_compile_options(${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror>)
  set_target_properties(${name} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON)
endfunction()

pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
loom_optional(UCX UCX_FOUND)

find_library(IBVERBS_LIBRARY ibverbs)
find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
set(_ibverbs_found OFF)
if(IBVERBS_LIBRARY AND IBVERBS_INCLUDE_DIR)
  set(_ibverbs_found ON)
endif()
loom_optional(IBVERBS _ibverbs_found)

find_package(MPI QUIET COMPONENTS CXX)
set(LOOM_HAVE_MPI ${MPI_CXX_FOUND})
