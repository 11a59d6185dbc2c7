/* libFuzzer target for the .gguf loader (make fuzz). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz_load("gguf", true, data, size);
}
