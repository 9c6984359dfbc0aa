# cmake/trainer.cmake — the trainer's model stack on libtorch: safetensors files, Hugging Face
# configs, a llama/qwen2 decoder, LoRA adapters in PEFT's layout, batched sampling.
#
# libtorch comes from find_package(Torch): Debian's libtorch-dev (CPU) here, the pip wheel's
# (CUDA) on the GPU machine through -DTorch_DIR=.../site-packages/torch/share/cmake/Torch. Without
# it nothing of the trainer is built and configure still succeeds: the evaluator needs no torch.
option(CUDAL1_STATIC_TRAINER "a static build with the trainer, against the libtorch of Torch_DIR (scripts/build_gpu_trainer.sh)" OFF)
if(CUDAL1_STATIC AND NOT CUDAL1_STATIC_TRAINER)
  # The static build carries the CLI to the GPU machine, which has no Debian libtorch: only when
  # asked for (with the wheel's Torch_DIR, as scripts/build_gpu_trainer.sh does) is the trainer
  # linked in, never against a libtorch found by chance on this machine (a Torch_DIR cached by an
  # earlier configure would do that).
  message(STATUS "cudal1: static build, the trainer is not part of it (CUDAL1_STATIC_TRAINER=ON with Torch_DIR adds it)")
  return()
endif()
if(NOT TARGET cudal1_tokenizer)
  message(STATUS "cudal1: no tokenizer in this build (cmake/tokenizer.cmake), so no trainer either")
  return()
endif()
if(Torch_DIR)
  # TorchConfig.cmake looks for Caffe2 and libc10 with PATHS, searched after the system's
  # prefixes: on a machine with Debian's libtorch-dev the wheel's Torch would pick up Debian's
  # 1.13 Caffe2 config and libc10.so. Its own prefix first keeps it whole.
  get_filename_component(_cudal1_torch_prefix "${Torch_DIR}/../../.." ABSOLUTE)
  list(PREPEND CMAKE_PREFIX_PATH "${_cudal1_torch_prefix}")
endif()
find_package(Torch CONFIG QUIET)
if(NOT Torch_FOUND)
  message(STATUS "cudal1: libtorch not found (set Torch_DIR); the trainer is not built")
  return()
endif()
message(STATUS "cudal1: trainer on libtorch ${Torch_VERSION} (${TORCH_INSTALL_PREFIX})")

cudal1_layer(trainer
  SOURCES
    src/trainer/safetensors.cpp
    src/trainer/model_config.cpp
    src/trainer/model.cpp
    src/trainer/lora.cpp
    src/trainer/generate.cpp
    src/trainer/objectives.cpp
    src/trainer/train.cpp
    src/trainer/distributed.cpp
    src/trainer/sft.cpp
    src/trainer/chat_data.cpp
    src/trainer/stage_io.cpp
    src/trainer/model_policy.cpp
    src/trainer/rl_stage.cpp
    src/trainer/init_model.cpp
    src/trainer/step_bench.cpp
    src/trainer/device.cpp
  DEPENDS rl tokenizer)
set(_cudal1_cxx_before_torch "")
if(CUDAL1_STATIC)
  # The wheel's libtorch.so exports libstdc++ functions of its own (std::filesystem and more,
  # linked into it from libstdc++_nonshared.a). -static-libstdc++ puts the static library last on
  # the link line, after libtorch.so, so our calls bound to libtorch's copies, which crash
  # (std::filesystem::remove_all jumped to 0). Named before libtorch, the static one serves them.
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.a
                  OUTPUT_VARIABLE _cudal1_cxx_before_torch OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
target_link_libraries(cudal1_trainer PUBLIC ${_cudal1_cxx_before_torch} ${TORCH_LIBRARIES})
# Torch's headers are most of every translation unit's compile time: parse them once. The tests
# reuse the library's precompiled header, so their flags must stay the library's plus definitions.
target_precompile_headers(cudal1_trainer PRIVATE src/trainer/torch_pch.h)

add_executable(cudal1_trainer_tests
  src/trainer/safetensors_test.cpp
  src/trainer/model_config_test.cpp
  src/trainer/model_test.cpp
  src/trainer/lora_test.cpp
  src/trainer/generate_test.cpp
  src/trainer/objectives_test.cpp
  src/trainer/train_test.cpp
  src/trainer/sft_test.cpp
  src/trainer/distributed_test.cpp
  src/trainer/model_policy_test.cpp
  src/trainer/rl_stage_test.cpp
  src/trainer/init_model_test.cpp
)
target_link_libraries(cudal1_trainer_tests PRIVATE cudal1_trainer GTest::gtest_main)
target_precompile_headers(cudal1_trainer_tests REUSE_FROM cudal1_trainer)
target_compile_definitions(cudal1_trainer_tests PRIVATE
  CUDAL1_TRAINER_FIXTURES="${CMAKE_SOURCE_DIR}/tests/fixtures/trainer"
  CUDAL1_TOKENIZER_FIXTURES="${CMAKE_SOURCE_DIR}/tests/fixtures/tokenizer"
  CUDAL1_FIXTURES_DIR="${CMAKE_SOURCE_DIR}/tests/fixtures")
gtest_discover_tests(cudal1_trainer_tests PROPERTIES LABELS "unit" DISCOVERY_TIMEOUT 120)

# `cudal1 train`: the CLI gets the trainer (main.cpp says what to do in a build without it).
target_sources(cudal1 PRIVATE src/cli/train_command.cpp src/cli/model_policy_options.cpp)
target_sources(cudal1 PRIVATE src/cli/train_init_command.cpp src/cli/train_bench_command.cpp)
target_link_libraries(cudal1 PRIVATE cudal1_trainer)
target_compile_definitions(cudal1 PRIVATE CUDAL1_HAVE_TRAINER=1)
# The C++ training step against bench/train_step_torch.py's, the same step in PyTorch from Python,
# on the tiny fixture: the same ids and initial adapter, each step's loss and gradient norm within
# tolerance. The interpreter is the evaluator's (CUDAL1_PYTHON, python3, /usr/bin/python3: the
# first with torch); skipped where none has torch.
add_test(NAME trainer.StepBenchMatchesPyTorch
  COMMAND sh -c [[for py in "$CUDAL1_PYTHON" python3 /usr/bin/python3; do
      if [ -n "$py" ] && "$py" -c 'import torch' 2>/dev/null; then
        exec "$py" "$0" --cudal1 "$1" --model "$2" --batch 2 --seq 16 --steps 3 --warmup 1 --lr 1e-3 --lora-r 4
      fi
    done
    echo "no Python with torch: skipped"; exit 77]]
    ${CMAKE_SOURCE_DIR}/bench/train_step_torch.py $<TARGET_FILE:cudal1> ${CMAKE_SOURCE_DIR}/tests/fixtures/trainer/llama)
set_tests_properties(trainer.StepBenchMatchesPyTorch PROPERTIES LABELS "unit" SKIP_RETURN_CODE 77)
if(CAFFE2_USE_CUDA)
  # The wheel's libtorch has CUDA: the step benchmark reads its caching allocator's peak memory.
  set_source_files_properties(src/trainer/step_bench.cpp PROPERTIES COMPILE_DEFINITIONS CUDAL1_TORCH_CUDA=1)
endif()
if(CUDAL1_STATIC)
  # libtorch stays shared (the wheel's); the binary finds it through LD_LIBRARY_PATH on the GPU
  # machine, so a build-tree RPATH into this machine's venv would only mislead.
  set_target_properties(cudal1 cudal1_trainer_tests PROPERTIES SKIP_BUILD_RPATH ON)
endif()
