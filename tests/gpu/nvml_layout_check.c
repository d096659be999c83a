/* Compiled on the GPU machine against the driver's own nvml.h: prints the sizes and offsets
 * gpuclean's nvml_abi.h assumes, next to what the header says. Any MISMATCH line means
 * src/nvml/nvml_abi.h is wrong for that driver. */
#include <nvml.h>
#include <stddef.h>
#include <stdio.h>

static int failures = 0;

static void expect(const char* what, size_t actual, size_t ours) {
  printf("%-45s header=%zu gpuclean=%zu %s\n", what, actual, ours, actual == ours ? "ok" : "MISMATCH");
  if (actual != ours) failures++;
}

int main(void) {
  expect("sizeof(nvmlProcessInfo_v1_t)", sizeof(nvmlProcessInfo_v1_t), 16);
  expect("sizeof(nvmlProcessInfo_v2_t)", sizeof(nvmlProcessInfo_v2_t), 24);
  expect("sizeof(nvmlProcessInfo_t) [_v3 functions]", sizeof(nvmlProcessInfo_t), 24);
  expect("offsetof(nvmlProcessInfo_t, usedGpuMemory)", offsetof(nvmlProcessInfo_t, usedGpuMemory), 8);
  expect("sizeof(nvmlMemory_t)", sizeof(nvmlMemory_t), 24);
  expect("sizeof(nvmlMemory_v2_t)", sizeof(nvmlMemory_v2_t), 40);
  expect("nvmlMemory_v2", nvmlMemory_v2, 40u | (2u << 24));
  expect("offsetof(nvmlMemory_v2_t, used)", offsetof(nvmlMemory_v2_t, used), 32);
  expect("sizeof(nvmlPciInfo_t)", sizeof(nvmlPciInfo_t), 68);
  expect("offsetof(nvmlPciInfo_t, busId)", offsetof(nvmlPciInfo_t, busId), 36);
  expect("NVML_VALUE_NOT_AVAILABLE", (size_t)NVML_VALUE_NOT_AVAILABLE, (size_t)~0ULL);
  printf("layout: %s\n", failures ? "MISMATCH" : "ok");
  return failures ? 1 : 0;
}
