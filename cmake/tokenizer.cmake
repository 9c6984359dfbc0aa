# cmake/tokenizer.cmake — the trainer's tokenizer (src/tokenizer/): byte-level BPE as Hugging Face
# ships it for Qwen2 and Llama-3, with no libtorch. Included from the top-level CMakeLists.txt.
#
# Needs PCRE2 (Debian libpcre2-dev) for the pre-tokenizers' Unicode regexes, and uses ICU (Debian
# libicu-dev) for NFC when it is there; without ICU, tokenizers that ask for NFC are refused at
# load time. CUDAL1_STATIC builds (for the GPU machine) link both statically, or go without the
# tokenizer when the static archives are missing.

find_package(PkgConfig REQUIRED)  # the top level only looks for it outside static builds

set(CUDAL1_TOKENIZER_SOURCES
  src/tokenizer/utf8.cpp
  src/tokenizer/byte_level.cpp
  src/tokenizer/regex.cpp
  src/tokenizer/normalizer.cpp
  src/tokenizer/pre_tokenizer.cpp
  src/tokenizer/bpe.cpp
  src/tokenizer/added_tokens.cpp
  src/tokenizer/chat_template.cpp
  src/tokenizer/tokenizer.cpp
)

set(_tok_pcre2 "")
set(_tok_icu "")
if(CUDAL1_STATIC)
  # Static archives only: the binary must not need Debian's shared libraries on the GPU machine.
  find_library(CUDAL1_PCRE2_STATIC NAMES libpcre2-8.a)
  find_library(CUDAL1_ICUUC_STATIC NAMES libicuuc.a)
  find_library(CUDAL1_ICUDATA_STATIC NAMES libicudata.a)
  if(CUDAL1_PCRE2_STATIC)
    set(_tok_pcre2 ${CUDAL1_PCRE2_STATIC})
  endif()
  if(CUDAL1_ICUUC_STATIC AND CUDAL1_ICUDATA_STATIC)
    set(_tok_icu ${CUDAL1_ICUUC_STATIC} ${CUDAL1_ICUDATA_STATIC} ${CMAKE_DL_LIBS})
  endif()
else()
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
  set(_tok_pcre2 PkgConfig::PCRE2)
  pkg_check_modules(ICU QUIET IMPORTED_TARGET icu-uc)
  if(ICU_FOUND)
    set(_tok_icu PkgConfig::ICU)
  endif()
endif()

if(NOT _tok_pcre2)
  message(STATUS "tokenizer: no static libpcre2-8.a, so this static build goes without cudal1_tokenizer")
  return()
endif()

cudal1_layer(tokenizer SOURCES ${CUDAL1_TOKENIZER_SOURCES} DEPENDS core)
target_link_libraries(cudal1_tokenizer PRIVATE ${_tok_pcre2})
if(_tok_icu)
  target_link_libraries(cudal1_tokenizer PRIVATE ${_tok_icu})
  target_compile_definitions(cudal1_tokenizer PRIVATE CUDAL1_TOKENIZER_HAVE_ICU=1)
else()
  message(STATUS "tokenizer: ICU not found; tokenizers with an NFC normalizer (Qwen2) will be refused")
endif()

add_executable(cudal1_tokenizer_tests
  src/tokenizer/utf8_test.cpp
  src/tokenizer/chat_template_test.cpp
  src/tokenizer/tokenizer_test.cpp
  src/tokenizer/fixture_test.cpp
)
target_link_libraries(cudal1_tokenizer_tests PRIVATE cudal1_tokenizer GTest::gtest_main)
target_compile_definitions(cudal1_tokenizer_tests PRIVATE
  CUDAL1_TOKENIZER_FIXTURES="${CMAKE_SOURCE_DIR}/tests/fixtures/tokenizer")
if(_tok_icu)
  target_compile_definitions(cudal1_tokenizer_tests PRIVATE CUDAL1_TOKENIZER_HAVE_ICU=1)
endif()
gtest_discover_tests(cudal1_tokenizer_tests PROPERTIES LABELS "unit" DISCOVERY_TIMEOUT 60)
