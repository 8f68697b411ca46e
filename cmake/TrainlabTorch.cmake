# Finds LibTorch inside the PyTorch wheel. The wheel is a CUDA build, so its CMake config also
# looks for the CUDA toolkit; CUDA code compiles and links even where no GPU or driver exists.
# CMAKE_PREFIX_PATH should hold torch.utils.cmake_prefix_path (scripts/quickstart.sh sets it);
# otherwise TRAINLAB_PYTHON is asked for it.
if(NOT Torch_DIR)
  set(TRAINLAB_PYTHON "" CACHE FILEPATH "Python interpreter whose torch package provides LibTorch")
  if(TRAINLAB_PYTHON)
    execute_process(COMMAND "${TRAINLAB_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                    OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
    if(_rc EQUAL 0)
      list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
    endif()
  endif()
endif()

# The wheel's Caffe2 config wants these found the modern way.
set(CAFFE2_USE_CUDNN OFF CACHE BOOL "")
find_package(Torch REQUIRED)

# Headers of CUDA-only parts (CUPTI, NVTX) ship with the toolkit; those parts switch off at run
# time when no device is present.
find_package(CUDAToolkit QUIET)
set(TRAINLAB_HAVE_CUDA_HEADERS OFF)
if(CUDAToolkit_FOUND)
  set(TRAINLAB_HAVE_CUDA_HEADERS ON)
endif()
message(STATUS "trainlab: LibTorch ${Torch_VERSION}, CUDA toolkit headers: ${TRAINLAB_HAVE_CUDA_HEADERS}")

# NCCL for data parallel on CUDA: c10d's ProcessGroupNCCL lives in the wheel's libtorch_cuda; its
# header needs nccl.h, which the wheel's nvidia-nccl package ships beside torch (or the toolkit).
set(TRAINLAB_HAVE_NCCL OFF)
if(TARGET torch_cuda AND TRAINLAB_HAVE_CUDA_HEADERS)
  get_filename_component(_trainlab_site_packages "${Torch_DIR}/../../../.." ABSOLUTE)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS "${_trainlab_site_packages}/nvidia/nccl/include" ${CUDAToolkit_INCLUDE_DIRS})
  if(NCCL_INCLUDE_DIR)
    set(TRAINLAB_HAVE_NCCL ON)
  endif()
endif()
message(STATUS "trainlab: NCCL header for c10d's ProcessGroupNCCL: ${TRAINLAB_HAVE_NCCL}")

# The Python whose torch provides LibTorch (a virtual environment's bin/ beside lib/pythonX.Y/site-packages):
# the tests run PyTorch itself with it to write sample profiler traces.
get_filename_component(_trainlab_env "${Torch_DIR}/../../../../../../.." ABSOLUTE)
set(TRAINLAB_TORCH_PYTHON "")
if(EXISTS "${_trainlab_env}/bin/python3")
  set(TRAINLAB_TORCH_PYTHON "${_trainlab_env}/bin/python3")
endif()
