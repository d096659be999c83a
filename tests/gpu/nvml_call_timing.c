/* Times each NVML call gpuclean makes, on the GPU machine (gcc against the driver's nvml.h,
 * -ldl not needed: linked to libnvidia-ml directly). Shows where a status call's time goes.
 *   nvml_call_timing            nvmlInit_v2, as gpuclean does
 *   nvml_call_timing noattach   nvmlInitWithFlags(NVML_INIT_FLAG_NO_ATTACH): does deferring the
 *                               GPUs' attach make a one-GPU answer cheaper? (issue 14's speed) */
#include <nvml.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
#define TIME(label, call)                                              \
  do {                                                                 \
    double t0 = now_ms();                                              \
    nvmlReturn_t rc = call;                                            \
    printf("%-44s %7.3f ms  rc=%d\n", label, now_ms() - t0, (int)rc);  \
  } while (0)

int main(int argc, char** argv) {
  nvmlDevice_t dev;
  char text[96];
  unsigned int value, pending, count = 64;
  nvmlMemory_v2_t mem = {.version = nvmlMemory_v2};
  nvmlPciInfo_t pci;
  nvmlProcessInfo_t procs[64];
  if (argc > 1 && argv[1][0] == 'n') {
    TIME("nvmlInitWithFlags(NO_ATTACH)", nvmlInitWithFlags(NVML_INIT_FLAG_NO_ATTACH));
  } else {
    TIME("nvmlInit_v2", nvmlInit_v2());
  }
  TIME("nvmlSystemGetDriverVersion", nvmlSystemGetDriverVersion(text, sizeof text));
  TIME("nvmlDeviceGetCount_v2", nvmlDeviceGetCount_v2(&value));
  TIME("nvmlDeviceGetHandleByIndex_v2", nvmlDeviceGetHandleByIndex_v2(0, &dev));
  TIME("nvmlDeviceGetUUID", nvmlDeviceGetUUID(dev, text, sizeof text));
  TIME("nvmlDeviceGetName", nvmlDeviceGetName(dev, text, sizeof text));
  TIME("nvmlDeviceGetPciInfo_v3", nvmlDeviceGetPciInfo_v3(dev, &pci));
  TIME("nvmlDeviceGetMinorNumber", nvmlDeviceGetMinorNumber(dev, &value));
  TIME("nvmlDeviceGetMemoryInfo_v2", nvmlDeviceGetMemoryInfo_v2(dev, &mem));
  TIME("nvmlDeviceGetPersistenceMode", nvmlDeviceGetPersistenceMode(dev, (nvmlEnableState_t*)&value));
  TIME("nvmlDeviceGetComputeMode", nvmlDeviceGetComputeMode(dev, (nvmlComputeMode_t*)&value));
  TIME("nvmlDeviceGetMigMode", nvmlDeviceGetMigMode(dev, &value, &pending));
  TIME("nvmlDeviceGetComputeRunningProcesses_v3", nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, procs));
  count = 64;
  TIME("nvmlDeviceGetGraphicsRunningProcesses_v3", nvmlDeviceGetGraphicsRunningProcesses_v3(dev, &count, procs));
  count = 64;
  TIME("nvmlDeviceGetMPSComputeRunningProcesses_v3", nvmlDeviceGetMPSComputeRunningProcesses_v3(dev, &count, procs));
  count = 64;
  TIME("again: ComputeRunningProcesses_v3", nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, procs));
  /* Issue 37: what each look's activity calls add. */
  nvmlUtilization_t rates;
  TIME("nvmlDeviceGetUtilizationRates", nvmlDeviceGetUtilizationRates(dev, &rates));
  TIME("nvmlDeviceGetTemperature", nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &value));
  TIME("nvmlDeviceGetPowerUsage", nvmlDeviceGetPowerUsage(dev, &value));
  struct timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  const unsigned long long since = (unsigned long long)real.tv_sec * 1000000ULL - 2000000ULL;
  nvmlProcessUtilizationInfo_v1_t samples[96];
  nvmlProcessesUtilizationInfo_t info = {.version = nvmlProcessesUtilizationInfo_v1,
                                         .lastSeenTimeStamp = since};
  TIME("ProcessesUtilizationInfo (size)", nvmlDeviceGetProcessesUtilizationInfo(dev, &info));
  info.processSamplesCount = 96;
  info.procUtilArray = samples;
  info.lastSeenTimeStamp = since;
  TIME("ProcessesUtilizationInfo (fetch)", nvmlDeviceGetProcessesUtilizationInfo(dev, &info));
  TIME("again: ProcessesUtilizationInfo (fetch)", nvmlDeviceGetProcessesUtilizationInfo(dev, &info));
  nvmlProcessUtilizationSample_t old[96];
  count = 0;
  TIME("ProcessUtilization (size)", nvmlDeviceGetProcessUtilization(dev, NULL, &count, since));
  count = 96;
  TIME("ProcessUtilization (fetch)", nvmlDeviceGetProcessUtilization(dev, old, &count, since));
  TIME("nvmlShutdown", nvmlShutdown());
  return 0;
}
