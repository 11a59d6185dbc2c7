/* libFuzzer target for the .npy loader (make fuzz). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz_load("npy", false, data, size);
}
