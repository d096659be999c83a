/* Do NVML's activity calls overlap when made from several threads at once? Times
 * nvmlDeviceGetUtilizationRates, nvmlDeviceGetPowerUsage and
 * nvmlDeviceGetProcessesUtilizationInfo one after another, then each on a thread of its own,
 * started together (issue 37: the three cost ~7.5 ms a GPU in a row on the H200).
 *   gcc -I<dir of nvml.h> tests/gpu/nvml_parallel_probe.c -o /tmp/npp -lnvidia-ml -lpthread */
#include <nvml.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

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

int main(int argc, char** argv) {
  /* "threads": the first (cold) round on threads; else in a row. */
  const int first = argc > 1 && argv[1][0] == 't' ? 1 : 0;
  void* (*calls[3])(void*) = {rates, power, samples};
  struct timespec real;
  nvmlInit_v2();
  nvmlDeviceGetHandleByIndex_v2(0, &dev);
  clock_gettime(CLOCK_REALTIME, &real);
  since = (unsigned long long)real.tv_sec * 1000000ULL - 2000000ULL;
  /* A second apart, each way first in turn: a look of status or top comes after a pause. */
  for (int rep = 0; rep < 6; ++rep) {
    double row = 0, together = 0;
    for (int way = 0; way < 2; ++way) {
      sleep(1);
      const double t0 = now_ms();
      if ((way + rep + first) % 2 == 0) {
        for (int i = 0; i < 3; ++i) calls[i](NULL);
        row = now_ms() - t0;
      } else {
        pthread_t threads[3];
        for (int i = 0; i < 3; ++i) pthread_create(&threads[i], NULL, calls[i], NULL);
        for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
        together = now_ms() - t0;
      }
    }
    printf("in a row %6.3f ms   three threads at once %6.3f ms   (%s first)\n", row, together,
           (rep + first) % 2 == 0 ? "in a row" : "threads");
  }
  nvmlShutdown();
  return 0;
}
