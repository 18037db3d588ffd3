# LibTorch: the user's own (Torch_DIR / CMAKE_PREFIX_PATH) or the torch wheel that
# scripts/setup installs into ~/.cache/onset/venv.
set(ONSET_VENV "$ENV{HOME}/.cache/onset/venv" CACHE PATH "Virtual environment holding the torch wheel")
if(NOT Torch_DIR AND EXISTS "${ONSET_VENV}/bin/python")
  execute_process(
    COMMAND "${ONSET_VENV}/bin/python" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _onset_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_onset_torch_prefix)
    list(APPEND CMAKE_PREFIX_PATH "${_onset_torch_prefix}")
  endif()
endif()

# torch's CUDA config otherwise falls back to an architecture list that CUDA 13 rejects.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
  string(REPLACE "a" "" _archs "${ONSET_CUDA_ARCHITECTURES}")
  set(_torch_archs "")
  foreach(_a IN LISTS ONSET_CUDA_ARCHITECTURES)
    string(REGEX REPLACE "^([0-9])([0-9a-z]+)$" "\\1.\\2" _dotted "${_a}")
    list(APPEND _torch_archs "${_dotted}")
  endforeach()
  list(JOIN _torch_archs ";" TORCH_CUDA_ARCH_LIST)
endif()

# torch's config asks for CUDA::nvToolsExt by name, and CUDA 13 has no libnvToolsExt, only the
# header-only nvtx3. Debian 12's CMake 3.25 FindCUDAToolkit then sets a property on that target
# whether or not it made it, and configuring stops ("set_property could not find TARGET
# CUDA::nvToolsExt"). So the target is declared before the toolkit is looked up and points at
# nvtx3 once it is found.
if(NOT TARGET CUDA::nvToolsExt)
  add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
endif()
find_package(CUDAToolkit QUIET)
if(TARGET CUDA::nvtx3)
  target_link_libraries(CUDA::nvToolsExt INTERFACE CUDA::nvtx3)
endif()

find_package(Torch REQUIRED)
# Torch's flags (ABI define, include dirs) travel with the torch target; keep them off others.
message(STATUS "LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}")
