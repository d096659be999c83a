/* Do NVML's activity calls overlap when made from several threads at once? Times
 * nvmlDeviceGetUtilizationRates, nvmlDeviceGetPowerUsage and
 * nvmlDeviceGetProcessesUtilizationInfo one after another, then each on a thread of its own,
 * started together (issue 37: the three cost ~7.5 ms a GPU in a row on the H200).
 *   gcc -I<dir of nvml.h> tests/gpu/nvml_parallel_probe.c -o /tmp/npp -lnvidia-ml -lpthread */
#include <nvml.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static nvmlDevice_t dev;
static unsigned long long since;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void* rates(void* arg) {
  nvmlUtilization_t u;
  (void)arg;
  nvmlDeviceGetUtilizationRates(dev, &u);
  return NULL;
}

static void* power(void* arg) {
  unsigned int mw;
  (void)arg;
  nvmlDeviceGetPowerUsage(dev, &mw);
  return NULL;
}

static void* samples(void* arg) {
  static __thread nvmlProcessUtilizationInfo_v1_t buffer[128];
  nvmlProcessesUtilizationInfo_t info = {.version = nvmlProcessesUtilizationInfo_v1,
                                         .processSamplesCount = 128,
                                         .lastSeenTimeStamp = since,
                                         .procUtilArray = buffer};
  (void)arg;
  nvmlDeviceGetProcessesUtilizationInfo(dev, &info);
  return NULL;
}

int main(void) {
  void* (*calls[3])(void*) = {rates, power, samples};
  struct timespec real;
  nvmlInit_v2();
  nvmlDeviceGetHandleByIndex_v2(0, &dev);
  clock_gettime(CLOCK_REALTIME, &real);
  since = (unsigned long long)real.tv_sec * 1000000ULL - 2000000ULL;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now_ms();
    for (int i = 0; i < 3; ++i) calls[i](NULL);
    double sequential = now_ms() - t0;
    pthread_t threads[3];
    t0 = now_ms();
    for (int i = 0; i < 3; ++i) pthread_create(&threads[i], NULL, calls[i], NULL);
    for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
    printf("in a row %6.3f ms   three threads at once %6.3f ms\n", sequential, now_ms() - t0);
  }
  nvmlShutdown();
  return 0;
}
