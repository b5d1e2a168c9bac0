# README command 1 builds llama-cpp-python (the [local] extra) with this file:
#
#   CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$PWD/llama-cpp-text.cmake" pip install ...
#
# CMake includes it right after llama.cpp's own project() call. llama-cpp-python forces
# LLAMA_BUILD_COMMON on (a -D cannot turn it off), so llama.cpp also compiles its "common" library
# and cpp-httplib: 44% of the build's CPU time, for nothing llama-cpp-python loads (it loads
# libllama and libggml*; tests/test_local_build.py checks the local model's process). A plain
# variable set here, in llama.cpp's directory scope, hides that cache entry, so neither is built.
# LLAVA_BUILD=OFF, a llama-cpp-python option, drops the multimodal library (mtmd, 20%) as well.
# Measured with `pip wheel --no-deps llama-cpp-python==0.3.36`, user+sys CPU seconds: default 573,
# LLAVA_BUILD=OFF 461, both 208. llama.cpp's tests, examples, tools and server are already off when
# it is built as llama-cpp-python's subproject.
set(LLAMA_BUILD_COMMON OFF)
