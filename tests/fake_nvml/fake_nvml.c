/* A fake libnvidia-ml.so.1 for tests: gpuclean dlopens "libnvidia-ml.so.1", so running it with
 * LD_LIBRARY_PATH pointing at one of this library's build directories exercises the real
 * dlopen/dlsym path, the record decoding and every error path without a GPU.
 *
 * Built in variants (tests/CMakeLists.txt), one directory each, because which optional symbols
 * a driver exports is part of what gpuclean looks at, and dlsym must fail for the others:
 *   r580  exports the _v3 process lists, nvmlDeviceGetConfComputeMemSizeInfo and
 *         nvmlDeviceGetRunningProcessDetailList (as 580 does); default records: 24 bytes
 *   r535  exports nvmlDeviceGetConfComputeMemSizeInfo and NOT
 *         nvmlDeviceGetRunningProcessDetailList (as 535.43-535.86 do); default records: 32 bytes
 *   r470  no _v3 functions, neither of the two symbols above (the _v2 lists, 24 bytes)
 *
 * Behaviour comes from a scenario file named by the environment variable FAKE_NVML_CONFIG
 * (without it: one idle GPU). One "key value..." per line; '#' starts a comment; GPU is an
 * index from 0; BYTES are decimal; unknown keys are ignored.
 *
 *   driver VERSION           nvmlSystemGetDriverVersion   (r580 default "580.159.04")
 *   nvml_version VERSION     nvmlSystemGetNVMLVersion
 *   cuda N                   nvmlSystemGetCudaDriverVersion(_v2), e.g. 13000
 *   gpus N                   number of GPUs (0..8; default 1). 0 is a driver that loads and
 *                            answers but sees no GPU: nvmlDeviceGetCount returns 0
 *   name GPU TEXT...         the rest of the line        (default "NVIDIA H200")
 *   uuid GPU TEXT            (default GPU-fake-N)
 *   pci GPU BUSID            (default 00000000:0N:00.0)
 *   minor GPU N              (default N)
 *   total GPU BYTES          (default 150754820096, an H200)
 *   used GPU BYTES           (default 641728512, the driver's reserve)
 *   reserved GPU BYTES       nvmlMemory_v2_t.reserved     (default 0)
 *   mig GPU 0|1              nvmlDeviceGetMigMode's current mode (default 0)
 *   process GPU KIND PID BYTES [GI CI]
 *                            one entry of GPU's list KIND (compute, graphics or mps); BYTES may
 *                            be "na" (NVML_VALUE_NOT_AVAILABLE); GI/CI default 0xFFFFFFFF
 *   records STRIDE           how the _v3 and _v2 list functions lay out their records:
 *                            24 (nvmlProcessInfo_v2_t), 32 (24 + usedGpuCcProtectedMemory, as
 *                            535.43-535.86), 16 (nvmlProcessInfo_v1_t's layout), or "garbage"
 *                            (24 bytes per record of pseudo-random bytes). The v1 functions
 *                            always write 16-byte records.
 *   fail FUNCTION CODE [GPU] FUNCTION (its exported name, e.g. nvmlDeviceGetMemoryInfo) returns
 *                            the nvmlReturn_t CODE (e.g. 15, GPU_IS_LOST), for every GPU or only
 *                            for GPU
 *   hang FUNCTION            FUNCTION never returns (pause() forever; signals still end the
 *                            process, as for a user-space hang)
 *   slow FUNCTION MS         FUNCTION sleeps MS milliseconds, then behaves as without this line
 *                            (the other rules for it still apply): a driver that answers late
 *   release_exited 1         a process that has exited (no /proc entry, or a zombie whose last
 *                            thread is gone) leaves every list and its bytes leave "used", at
 *                            each query, as the real driver frees an exited process's memory.
 *                            Without it the lists are static: a dead owner stays listed
 *   reload 1                 re-read this file whenever it changes (a new inode, size or
 *                            mtime; write it elsewhere and rename it over): a scenario that
 *                            changes while one process keeps NVML open (the recorder)
 *   utilization GPU PERCENT  nvmlDeviceGetUtilizationRates's gpu figure (default 0)
 *   power GPU MILLIWATTS     nvmlDeviceGetPowerUsage (default 75000)
 *   temperature GPU CELSIUS  nvmlDeviceGetTemperature (default 31)
 *   activity GPU PID SM MEM [AGE_MS]
 *                            one utilisation sample of PID, taken AGE_MS ago (default 500) at
 *                            every call: a process that keeps computing. Both per-process
 *                            utilisation calls return the samples newer than the
 *                            lastSeenTimeStamp they are given, NVML_ERROR_NOT_FOUND when there
 *                            are none (as the driver does when no process was busy).
 *                            nvmlDeviceGetProcessesUtilizationInfo is exported by r580 only
 *                            (the driver added it in 550)
 *   activity_at GPU PID SM MEM UNIX_MS
 *                            one sample taken at UNIX_MS (milliseconds since the epoch), the
 *                            same at every call: a process's last kernel, which the driver
 *                            keeps showing for seconds (docs/facts.md)
 *   activity_decay GPU PID SM MEM HALF_LIFE_MS UNIX_MS
 *                            a process whose kernels stopped at UNIX_MS: a new sample at every
 *                            call (taken 100 ms before it), its figures SM and MEM halving every
 *                            HALF_LIFE_MS since then, as the driver's smoothed figure of such a
 *                            process decays (the H100, docs/facts.md)
 *   crash FUNCTION           FUNCTION dies of SIGSEGV, as a driver bug would. Its default
 *                            action, as in a release build: a sanitizer's handler (ASan build)
 *                            would spend seconds on a report first. Core dumps off, so a test
 *                            leaves no core file behind.
 *
 * Rules apply in file order: the first hang, crash or matching fail line for a function decides;
 * every slow line before it adds its delay first.
 *
 * Example (535-style, two processes on GPU 0):
 *   driver 535.54.03
 *   used 0 17179869184
 *   process 0 compute 4242 8589934592
 *   process 0 compute 4243 8589934592
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
};

typedef struct FakeDevice* nvmlDevice_t;

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

enum { kMaxGpus = 8, kMaxProcesses = 64, kMaxRules = 32, kKinds = 3 };
enum { kCompute = 0, kGraphics = 1, kMps = 2 };
enum { kStrideGarbage = -1 };

struct FakeProcess {
  int kind;
  unsigned int pid;
  unsigned long long used;
  unsigned int gi, ci;
};

struct FakeSample {
  unsigned int pid, sm, mem;
  long age_ms;              /* activity: taken this long before each call */
  unsigned long long at_ms; /* activity_at, activity_decay: taken (stopped) then; 0: none */
  long half_life_ms;        /* activity_decay: > 0 */
};

enum { kMaxSamples = 16 };

struct FakeDevice {
  unsigned int index;
  unsigned int utilization, power_mw, temperature;
  struct FakeSample samples[kMaxSamples];
  int sample_count;
  char name[96], uuid[96], pci[32];
  unsigned int minor;
  unsigned long long total, used, reserved;
  unsigned int mig;
  struct FakeProcess processes[kMaxProcesses];
  int process_count;
};

enum RuleKind { kFail, kHang, kSlow, kCrash };

struct Rule {
  char function[96];
  enum RuleKind kind;
  int code;      /* for "fail" */
  int gpu;       /* for "fail": -1 is every GPU */
  long delay_ms; /* for "slow" */
};

static struct {
  int loaded;
  char driver[96], nvml_version[96];
  int cuda;
  unsigned int gpu_count;
  struct FakeDevice devices[kMaxGpus];
  int stride;
  struct Rule rules[kMaxRules];
  int rule_count;
  int init_count;
  int release_exited;
  int reload;
  struct stat file; /* the scenario file as last read (reload) */
} g;

static void set_defaults(void) {
#if defined(FAKE_NVML_R535)
  snprintf(g.driver, sizeof g.driver, "535.54.03");
  snprintf(g.nvml_version, sizeof g.nvml_version, "12.535.54.03");
  g.cuda = 12020;
  g.stride = 32;
#elif defined(FAKE_NVML_R470)
  snprintf(g.driver, sizeof g.driver, "470.256.02");
  snprintf(g.nvml_version, sizeof g.nvml_version, "11.470.256.02");
  g.cuda = 11040;
  g.stride = 24;
#else
  snprintf(g.driver, sizeof g.driver, "580.159.04");
  snprintf(g.nvml_version, sizeof g.nvml_version, "13.580.159.04");
  g.cuda = 13000;
  g.stride = 24;
#endif
  g.gpu_count = 1;
  for (unsigned int i = 0; i < kMaxGpus; ++i) {
    struct FakeDevice* d = &g.devices[i];
    d->index = i;
    snprintf(d->name, sizeof d->name, "NVIDIA H200");
    snprintf(d->uuid, sizeof d->uuid, "GPU-fake-%u", i);
    snprintf(d->pci, sizeof d->pci, "00000000:%02X:00.0", i + 6);
    d->minor = i;
    d->total = 150754820096ULL;
    d->used = 641728512ULL;
    d->power_mw = 75000;
    d->temperature = 31;
  }
}

static struct FakeDevice* device_arg(const char* text) {
  char* end = NULL;
  const unsigned long index = strtoul(text, &end, 10);
  if (end == text || index >= kMaxGpus) return NULL;
  return &g.devices[index];
}

static int kind_of(const char* text) {
  if (strcmp(text, "graphics") == 0) return kGraphics;
  if (strcmp(text, "mps") == 0) return kMps;
  return kCompute;
}

static void parse_line(char* line) {
  char* hash = strchr(line, '#');
  if (hash != NULL) *hash = '\0';
  char* save = NULL;
  const char* key = strtok_r(line, " \t\r\n", &save);
  if (key == NULL) return;
  const char* a = strtok_r(NULL, " \t\r\n", &save);
  if (a == NULL) return;
  if (strcmp(key, "driver") == 0) {
    snprintf(g.driver, sizeof g.driver, "%s", a);
  } else if (strcmp(key, "nvml_version") == 0) {
    snprintf(g.nvml_version, sizeof g.nvml_version, "%s", a);
  } else if (strcmp(key, "cuda") == 0) {
    g.cuda = atoi(a);
  } else if (strcmp(key, "gpus") == 0) {
    const unsigned long n = strtoul(a, NULL, 10);
    g.gpu_count = n > kMaxGpus ? kMaxGpus : (unsigned int)n;
  } else if (strcmp(key, "release_exited") == 0) {
    g.release_exited = atoi(a);
  } else if (strcmp(key, "reload") == 0) {
    g.reload = atoi(a);
  } else if (strcmp(key, "records") == 0) {
    g.stride = strcmp(a, "garbage") == 0 ? kStrideGarbage : atoi(a);
  } else if (strcmp(key, "fail") == 0 || strcmp(key, "hang") == 0 || strcmp(key, "slow") == 0 ||
             strcmp(key, "crash") == 0) {
    if (g.rule_count == kMaxRules) return;
    struct Rule* r = &g.rules[g.rule_count++];
    snprintf(r->function, sizeof r->function, "%s", a);
    r->kind = key[0] == 'f' ? kFail : key[0] == 'h' ? kHang : key[0] == 's' ? kSlow : kCrash;
    r->gpu = -1;
    if (r->kind == kFail) {
      const char* code = strtok_r(NULL, " \t\r\n", &save);
      const char* gpu = strtok_r(NULL, " \t\r\n", &save);
      r->code = code != NULL ? atoi(code) : 999;
      if (gpu != NULL) r->gpu = atoi(gpu);
    } else if (r->kind == kSlow) {
      const char* ms = strtok_r(NULL, " \t\r\n", &save);
      r->delay_ms = ms != NULL ? atol(ms) : 0;
    }
  } else {
    struct FakeDevice* d = device_arg(a);
    if (d == NULL) return;
    if (strcmp(key, "name") == 0) {
      /* The rest of the line, before strtok_r cuts it at the first blank (it did: "NVIDIA H100
         80GB HBM3" became "NVIDIA", seen by the completion helper). */
      char* rest = save;
      rest[strcspn(rest, "\r\n")] = '\0';
      snprintf(d->name, sizeof d->name, "%s", rest + strspn(rest, " \t"));
      return;
    }
    const char* b = strtok_r(NULL, " \t\r\n", &save);
    if (b == NULL) return;
    if (strcmp(key, "uuid") == 0) {
      snprintf(d->uuid, sizeof d->uuid, "%s", b);
    } else if (strcmp(key, "pci") == 0) {
      snprintf(d->pci, sizeof d->pci, "%s", b);
    } else if (strcmp(key, "minor") == 0) {
      d->minor = (unsigned int)strtoul(b, NULL, 10);
    } else if (strcmp(key, "total") == 0) {
      d->total = strtoull(b, NULL, 10);
    } else if (strcmp(key, "used") == 0) {
      d->used = strtoull(b, NULL, 10);
    } else if (strcmp(key, "reserved") == 0) {
      d->reserved = strtoull(b, NULL, 10);
    } else if (strcmp(key, "utilization") == 0) {
      d->utilization = (unsigned int)strtoul(b, NULL, 10);
    } else if (strcmp(key, "power") == 0) {
      d->power_mw = (unsigned int)strtoul(b, NULL, 10);
    } else if (strcmp(key, "temperature") == 0) {
      d->temperature = (unsigned int)strtoul(b, NULL, 10);
    } else if ((strcmp(key, "activity") == 0 || strcmp(key, "activity_at") == 0 ||
                strcmp(key, "activity_decay") == 0) &&
               d->sample_count < kMaxSamples) {
      const char* sm = strtok_r(NULL, " \t\r\n", &save);
      const char* mem = strtok_r(NULL, " \t\r\n", &save);
      const char* third = strtok_r(NULL, " \t\r\n", &save);
      const char* fourth = strtok_r(NULL, " \t\r\n", &save);
      if (sm == NULL || mem == NULL) return;
      const int at = strcmp(key, "activity_at") == 0;
      const int decay = strcmp(key, "activity_decay") == 0;
      if ((at && third == NULL) || (decay && fourth == NULL)) return;
      struct FakeSample* s = &d->samples[d->sample_count++];
      memset(s, 0, sizeof *s);
      s->pid = (unsigned int)strtoul(b, NULL, 10);
      s->sm = (unsigned int)strtoul(sm, NULL, 10);
      s->mem = (unsigned int)strtoul(mem, NULL, 10);
      s->age_ms = at || decay ? 100 : third != NULL ? atol(third) : 500;
      if (at) s->at_ms = strtoull(third, NULL, 10);
      if (decay) {
        s->half_life_ms = atol(third);
        s->at_ms = strtoull(fourth, NULL, 10);
      }
    } else if (strcmp(key, "mig") == 0) {
      d->mig = (unsigned int)strtoul(b, NULL, 10);
    } else if (strcmp(key, "process") == 0 && d->process_count < kMaxProcesses) {
      const char* pid = strtok_r(NULL, " \t\r\n", &save);
      const char* bytes = strtok_r(NULL, " \t\r\n", &save);
      const char* gi = strtok_r(NULL, " \t\r\n", &save);
      const char* ci = strtok_r(NULL, " \t\r\n", &save);
      if (pid == NULL || bytes == NULL) return;
      struct FakeProcess* p = &d->processes[d->process_count++];
      p->kind = kind_of(b);
      p->pid = (unsigned int)strtoul(pid, NULL, 10);
      p->used = strcmp(bytes, "na") == 0 ? ~0ULL : strtoull(bytes, NULL, 10);
      p->gi = gi != NULL ? (unsigned int)strtoul(gi, NULL, 0) : 0xFFFFFFFFu;
      p->ci = ci != NULL ? (unsigned int)strtoul(ci, NULL, 0) : 0xFFFFFFFFu;
    }
  }
}

/* Not thread-safe, like the rest of this fake: gpuclean calls NVML from one thread at a time. */
static void load(void) {
  const char* path = getenv("FAKE_NVML_CONFIG");
  if (g.loaded) {
    struct stat now;
    if (!g.reload || stat(path, &now) != 0) return;
    if (now.st_ino == g.file.st_ino && now.st_size == g.file.st_size &&
        now.st_mtim.tv_sec == g.file.st_mtim.tv_sec &&
        now.st_mtim.tv_nsec == g.file.st_mtim.tv_nsec) {
      return;
    }
    const int init_count = g.init_count;
    memset(&g, 0, sizeof g);
    g.init_count = init_count;
  }
  g.loaded = 1;
  set_defaults();
  if (path == NULL || *path == '\0') return;
  if (stat(path, &g.file) != 0) memset(&g.file, 0, sizeof g.file);
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "fake_nvml: cannot open %s\n", path);
    return;
  }
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) parse_line(line);
  fclose(f);
}

/* Sleeps the whole delay: a signal the caller handles does not cut it short. */
static void sleep_ms(long ms) {
  struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

/* The injected outcome of FUNCTION on device D (NULL: a system call), or -1 to go on. */
static int rule_for(const char* function, const struct FakeDevice* d) {
  load();
  for (int i = 0; i < g.rule_count; ++i) {
    const struct Rule* r = &g.rules[i];
    if (strcmp(r->function, function) != 0) continue;
    switch (r->kind) {
      case kHang:
        for (;;) pause();
      case kSlow:
        sleep_ms(r->delay_ms);
        continue;
      case kCrash: {
        const struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        abort(); /* SIGSEGV blocked: still a crash */
      }
      case kFail:
        break;
    }
    if (r->gpu < 0 || (d != NULL && (unsigned int)r->gpu == d->index)) return r->code;
  }
  if (g.init_count == 0 && strncmp(function, "nvmlInit", 8) != 0 &&
      strcmp(function, "nvmlErrorString") != 0) {
    return NVML_ERROR_UNINITIALIZED;
  }
  return -1;
}

#define INJECT(name, device)                     \
  do {                                           \
    const int injected = rule_for(name, device); \
    if (injected >= 0) return injected;          \
  } while (0)

static int valid(nvmlDevice_t d) {
  return d != NULL && d >= &g.devices[0] && d < &g.devices[g.gpu_count];
}

#define DEVICE_CALL(name, device)                           \
  do {                                                      \
    INJECT(name, device);                                   \
    if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT; \
  } while (0)

static nvmlReturn_t copy_text(const char* text, char* out, unsigned int length) {
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(out, text, strlen(text) + 1);
  return NVML_SUCCESS;
}

/* ---- init, errors, system ---- */

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  INJECT("nvmlInit_v2", NULL);
  ++g.init_count;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit(void) {
  INJECT("nvmlInit", NULL);
  ++g.init_count;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
  INJECT("nvmlShutdown", NULL);
  --g.init_count;
  return NVML_SUCCESS;
}

/* The driver's own wording (nvml.h / nvmlErrorString on 580). */
EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 5:
      return "Already Initialized";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 8:
      return "Insufficient External Power";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 11:
      return "Interrupted by IRQ";
    case 12:
      return "NVML Shared Library Not Found";
    case 13:
      return "Function Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires restart";
    case 17:
      return "Driver Not Loaded"; /* operating system error, close enough */
    case 18:
      return "RM has detected an NVML/RM version mismatch.";
    case 19:
      return "In use by another client";
    case 20:
      return "insufficient memory";
    case 21:
      return "No data";
    default:
      return "Unknown Error";
  }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  INJECT("nvmlSystemGetDriverVersion", NULL);
  return copy_text(g.driver, version, length);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  INJECT("nvmlSystemGetNVMLVersion", NULL);
  return copy_text(g.nvml_version, version, length);
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  INJECT("nvmlSystemGetCudaDriverVersion", NULL);
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *version = g.cuda;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  INJECT("nvmlSystemGetCudaDriverVersion_v2", NULL);
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *version = g.cuda;
  return NVML_SUCCESS;
}

/* ---- devices ---- */

static nvmlReturn_t get_count(const char* name, unsigned int* count) {
  INJECT(name, NULL);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = g.gpu_count;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return get_count("nvmlDeviceGetCount_v2", count);
}
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return get_count("nvmlDeviceGetCount", count);
}

static nvmlReturn_t get_handle(const char* name, unsigned int index, nvmlDevice_t* device) {
  INJECT(name, index < kMaxGpus ? &g.devices[index] : NULL);
  if (device == NULL || index >= g.gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g.devices[index];
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return get_handle("nvmlDeviceGetHandleByIndex_v2", index, device);
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return get_handle("nvmlDeviceGetHandleByIndex", index, device);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  DEVICE_CALL("nvmlDeviceGetUUID", device);
  return copy_text(device->uuid, uuid, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  DEVICE_CALL("nvmlDeviceGetName", device);
  return copy_text(device->name, name, length);
}

static nvmlReturn_t get_pci(const char* name, nvmlDevice_t device, nvmlPciInfo_t* pci) {
  DEVICE_CALL(name, device);
  if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busId, sizeof pci->busId, "%s", device->pci);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%.15s", device->pci + 4);
  pci->bus = device->index + 6;
  pci->pciDeviceId = 0x233510DE;
  return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return get_pci("nvmlDeviceGetPciInfo_v3", device, pci);
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  DEVICE_CALL("nvmlDeviceGetMinorNumber", device);
  if (minor == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *minor = device->minor;
  return NVML_SUCCESS;
}

/* Whether PID has exited as the driver sees it: no such process, or a zombie with no thread
 * left (a zombie leader whose other threads live, "Zl", still holds its context). */
static int exited(unsigned int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%u/stat", pid);
  FILE* f = fopen(path, "r");
  if (f == NULL) return 1;
  char text[1024];
  const size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  const char* close = strrchr(text, ')');
  if (close == NULL) return 0;
  char state = 0;
  long threads = 0;
  /* Fields after the command: 3 state ... 20 num_threads. */
  if (sscanf(close + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld",
             &state, &threads) != 2) {
    return 0;
  }
  return state == 'Z' && threads <= 1;
}

/* With "release_exited 1": drops the exited processes from DEVICE's lists and their bytes from
 * its used memory, at each query. */
static void release_exited(struct FakeDevice* device) {
  if (!g.release_exited) return;
  int kept = 0;
  for (int i = 0; i < device->process_count; ++i) {
    const struct FakeProcess p = device->processes[i];
    if (!exited(p.pid)) {
      device->processes[kept++] = p;
    } else if (p.used != ~0ULL) {
      device->used = p.used > device->used ? 0 : device->used - p.used;
    }
  }
  device->process_count = kept;
}

static unsigned long long free_of(const struct FakeDevice* d) {
  return d->used + d->reserved > d->total ? 0 : d->total - d->used - d->reserved;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  DEVICE_CALL("nvmlDeviceGetMemoryInfo", device);
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  release_exited(device);
  /* v1 counts the reserve as used, as the real v1 query does. */
  memory->total = device->total;
  memory->used = device->used + device->reserved;
  memory->free = free_of(device);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  DEVICE_CALL("nvmlDeviceGetMemoryInfo_v2", device);
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != ((unsigned int)sizeof(nvmlMemory_v2_t) | (2u << 24))) {
    return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
  }
  release_exited(device);
  memory->total = device->total;
  memory->reserved = device->reserved;
  memory->used = device->used;
  memory->free = free_of(device);
  return NVML_SUCCESS;
}

static nvmlReturn_t get_uint(const char* name, nvmlDevice_t device, unsigned int* out,
                             unsigned int value) {
  DEVICE_CALL(name, device);
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *out = value;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned int* mode) {
  return get_uint("nvmlDeviceGetPersistenceMode", device, mode, 1);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, unsigned int* mode) {
  return get_uint("nvmlDeviceGetComputeMode", device, mode, 0);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                         unsigned int* pending) {
  DEVICE_CALL("nvmlDeviceGetMigMode", device);
  if (current == NULL || pending == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *current = device->mig;
  *pending = device->mig;
  return NVML_SUCCESS;
}

/* ---- snapshot-only facts: plausible H200 answers ---- */

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type,
                                           unsigned int* mhz) {
  return get_uint("nvmlDeviceGetClockInfo", device, mhz, type == 2 ? 3201 : 1980);
}

EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, unsigned int type,
                                                   unsigned int* mhz) {
  return get_uint("nvmlDeviceGetApplicationsClock", device, mhz, type == 2 ? 3201 : 1980);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type,
                                              unsigned int* mhz) {
  return get_uint("nvmlDeviceGetMaxClockInfo", device, mhz, type == 2 ? 3201 : 1980);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                           unsigned long long* reasons) {
  DEVICE_CALL("nvmlDeviceGetCurrentClocksEventReasons", device);
  if (reasons == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *reasons = 0x1ULL; /* GPU idle */
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensor,
                                             unsigned int* celsius) {
  (void)sensor;
  DEVICE_CALL("nvmlDeviceGetTemperature", device);
  if (celsius == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *celsius = device->temperature;
  return NVML_SUCCESS;
}

/* ---- activity: every look asks ---- */

typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* rates) {
  DEVICE_CALL("nvmlDeviceGetUtilizationRates", device);
  if (rates == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  rates->gpu = device->utilization;
  rates->memory = 0;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* mw) {
  DEVICE_CALL("nvmlDeviceGetPowerUsage", device);
  if (mw == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *mw = device->power_mw;
  return NVML_SUCCESS;
}

static unsigned long long now_us(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (unsigned long long)now.tv_sec * 1000000ULL + (unsigned long long)now.tv_nsec / 1000ULL;
}

/* The samples newer than LAST_SEEN, with their time stamps, into PIDS/TIMES/SM/MEM (at most
 * CAPACITY); returns how many there are in all. */
static unsigned int samples_since(const struct FakeDevice* d, unsigned long long last_seen,
                                  unsigned int capacity, unsigned int* pids,
                                  unsigned long long* times, unsigned int* sm, unsigned int* mem) {
  const unsigned long long now = now_us();
  unsigned int n = 0;
  for (int i = 0; i < d->sample_count; ++i) {
    const struct FakeSample* s = &d->samples[i];
    const int fixed = s->at_ms > 0 && s->half_life_ms == 0;
    const unsigned long long at =
        fixed ? s->at_ms * 1000ULL : now - (unsigned long long)s->age_ms * 1000ULL;
    if (at <= last_seen) continue;
    double factor = 1.0;
    if (s->half_life_ms > 0 && at > s->at_ms * 1000ULL) {
      factor = exp2(-(double)(at - s->at_ms * 1000ULL) / 1000.0 / (double)s->half_life_ms);
    }
    if (n < capacity) {
      pids[n] = s->pid;
      times[n] = at;
      sm[n] = (unsigned int)(s->sm * factor + 0.5);
      mem[n] = (unsigned int)(s->mem * factor + 0.5);
    }
    ++n;
  }
  return n;
}

typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* As the H200 did (docs/facts.md): a NULL buffer is answered INSUFFICIENT_SIZE with a buffer
 * size, not the number of samples. */
enum { kSampleBufferSize = 72 };

EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                    nvmlProcessUtilizationSample_t* samples,
                                                    unsigned int* count,
                                                    unsigned long long last_seen) {
  DEVICE_CALL("nvmlDeviceGetProcessUtilization", device);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int pids[kMaxSamples], sm[kMaxSamples], mem[kMaxSamples];
  unsigned long long times[kMaxSamples];
  const unsigned int n = samples_since(device, last_seen, kMaxSamples, pids, times, sm, mem);
  if (n == 0) return NVML_ERROR_NOT_FOUND;
  if (samples == NULL || *count < n) {
    *count = kSampleBufferSize;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned int i = 0; i < n; ++i) {
    samples[i] = (nvmlProcessUtilizationSample_t){pids[i], times[i], sm[i], mem[i], 0, 0};
  }
  *count = n;
  return NVML_SUCCESS;
}

#if !defined(FAKE_NVML_R535) && !defined(FAKE_NVML_R470)
typedef struct {
  unsigned long long timeStamp;
  unsigned int pid, smUtil, memUtil, encUtil, decUtil, jpgUtil, ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct {
  unsigned int version;
  unsigned int processSamplesCount;
  unsigned long long lastSeenTimeStamp;
  nvmlProcessUtilizationInfo_v1_t* procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;

EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                          nvmlProcessesUtilizationInfo_v1_t* info) {
  DEVICE_CALL("nvmlDeviceGetProcessesUtilizationInfo", device);
  if (info == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->version != (unsigned int)(sizeof *info | (1U << 24))) return 25; /* VERSION_MISMATCH */
  unsigned int pids[kMaxSamples], sm[kMaxSamples], mem[kMaxSamples];
  unsigned long long times[kMaxSamples];
  const unsigned int n =
      samples_since(device, info->lastSeenTimeStamp, kMaxSamples, pids, times, sm, mem);
  if (n == 0) return NVML_ERROR_NOT_FOUND;
  if (info->procUtilArray == NULL || info->processSamplesCount < n) {
    info->processSamplesCount = kSampleBufferSize;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned int i = 0; i < n; ++i) {
    info->procUtilArray[i] =
        (nvmlProcessUtilizationInfo_v1_t){times[i], pids[i], sm[i], mem[i], 0, 0, 0, 0};
  }
  info->processSamplesCount = n;
  return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* mw) {
  return get_uint("nvmlDeviceGetEnforcedPowerLimit", device, mw, 700000);
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, unsigned int* current,
                                         unsigned int* pending) {
  DEVICE_CALL("nvmlDeviceGetEccMode", device);
  if (current == NULL || pending == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *current = 1;
  *pending = 1;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int type,
                                                unsigned int counter, unsigned long long* count) {
  (void)type;
  (void)counter;
  DEVICE_CALL("nvmlDeviceGetTotalEccErrors", device);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 0;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, unsigned int cause,
                                              unsigned int* count, unsigned long long* addresses) {
  (void)cause;
  (void)addresses;
  DEVICE_CALL("nvmlDeviceGetRetiredPages", device);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 0;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* correctable,
                                              unsigned int* uncorrectable, unsigned int* pending,
                                              unsigned int* failure) {
  DEVICE_CALL("nvmlDeviceGetRemappedRows", device);
  if (!correctable || !uncorrectable || !pending || !failure) return NVML_ERROR_INVALID_ARGUMENT;
  *correctable = *uncorrectable = *pending = *failure = 0;
  return NVML_SUCCESS;
}

/* ---- process lists ---- */

static void put32(unsigned char* at, unsigned int v) {
  memcpy(at, &v, sizeof v);
}
static void put64(unsigned char* at, unsigned long long v) {
  memcpy(at, &v, sizeof v);
}

/* Writes the list of `kind` at `stride` bytes per record (kStrideGarbage: 24 bytes of noise),
 * with NVML's size protocol: too small a buffer gets INSUFFICIENT_SIZE and the needed count. */
static nvmlReturn_t list(const char* name, nvmlDevice_t device, int kind, unsigned int* count,
                         void* infos, int stride) {
  DEVICE_CALL(name, device);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  release_exited(device);
  unsigned int n = 0;
  for (int i = 0; i < device->process_count; ++i) n += device->processes[i].kind == kind;
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = n;
  if (n == 0) return NVML_SUCCESS;
  if (infos == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned char* out = infos;
  static unsigned long long noise = 0x9E3779B97F4A7C15ULL;
  unsigned int written = 0;
  for (int i = 0; i < device->process_count; ++i) {
    const struct FakeProcess* p = &device->processes[i];
    if (p->kind != kind) continue;
    if (stride == kStrideGarbage) {
      for (int b = 0; b < 24; ++b) {
        noise ^= noise << 13;
        noise ^= noise >> 7;
        noise ^= noise << 17;
        out[written * 24 + (unsigned int)b] = (unsigned char)(noise >> 24);
      }
    } else {
      unsigned char* r = out + (size_t)written * (size_t)stride;
      memset(r, 0, (size_t)stride);
      put32(r, p->pid);
      put64(r + 8, p->used);
      if (stride >= 24) {
        put32(r + 16, p->gi);
        put32(r + 20, p->ci);
      }
      if (stride >= 32) put64(r + 24, 0); /* usedGpuCcProtectedMemory */
    }
    ++written;
  }
  return NVML_SUCCESS;
}

#if !defined(FAKE_NVML_R470)
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int* c,
                                                            void* i) {
  return list("nvmlDeviceGetComputeRunningProcesses_v3", d, kCompute, c, i, g.stride);
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int* c,
                                                             void* i) {
  return list("nvmlDeviceGetGraphicsRunningProcesses_v3", d, kGraphics, c, i, g.stride);
}
EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int* c,
                                                               void* i) {
  return list("nvmlDeviceGetMPSComputeRunningProcesses_v3", d, kMps, c, i, g.stride);
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int* c,
                                                            void* i) {
  return list("nvmlDeviceGetComputeRunningProcesses_v2", d, kCompute, c, i, g.stride);
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int* c,
                                                             void* i) {
  return list("nvmlDeviceGetGraphicsRunningProcesses_v2", d, kGraphics, c, i, g.stride);
}
EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int* c,
                                                               void* i) {
  return list("nvmlDeviceGetMPSComputeRunningProcesses_v2", d, kMps, c, i, g.stride);
}
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int* c, void* i) {
  return list("nvmlDeviceGetComputeRunningProcesses", d, kCompute, c, i, 16);
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int* c,
                                                          void* i) {
  return list("nvmlDeviceGetGraphicsRunningProcesses", d, kGraphics, c, i, 16);
}
EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t d, unsigned int* c,
                                                            void* i) {
  return list("nvmlDeviceGetMPSComputeRunningProcesses", d, kMps, c, i, 16);
}

/* The symbols gpuclean (like nvitop) looks for to tell the record layout; their answers do
 * not matter to gpuclean. */
#if !defined(FAKE_NVML_R470)
EXPORT nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t device, void* info) {
  (void)info;
  DEVICE_CALL("nvmlDeviceGetConfComputeMemSizeInfo", device);
  return NVML_ERROR_NOT_SUPPORTED;
}
#endif
#if !defined(FAKE_NVML_R535) && !defined(FAKE_NVML_R470)
EXPORT nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, void* list) {
  (void)list;
  DEVICE_CALL("nvmlDeviceGetRunningProcessDetailList", device);
  return NVML_ERROR_NOT_SUPPORTED;
}
#endif
