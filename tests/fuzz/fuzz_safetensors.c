/* libFuzzer target for the .safetensors loader (make fuzz). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz_load("safetensors", true, data, size);
}
