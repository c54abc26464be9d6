// Checks that a sanitizer build catches what it is built to catch, and that
// the TSan build's Abseil annotations (tsan_absl_sync.cc) order what
// absl::Mutex orders: a build whose suppressions or flags silenced
// everything would fail these tests. Each mode does one thing:
//
//   canary tsan-race     two threads write one int unguarded: a data race
//   canary tsan-mutex    the same under an absl::Mutex, with Await and a
//                        CondVar hand-off: no race
//   canary asan-overflow reads one int past a heap array
//   canary ubsan-overflow adds 1 to INT_MAX
//
// Exits 0 after the mode ran (a sanitizer that reports exits otherwise),
// 2 for an unknown mode.
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace {

int shared_value = 0;

void TsanRace() {
  std::thread other([] { shared_value = 1; });
  shared_value = 2;
  other.join();
}

void TsanMutex() {
  absl::Mutex mutex;
  absl::CondVar changed;
  int stage = 0;  // guarded by mutex
  std::thread other([&] {
    absl::MutexLock lock(&mutex);
    mutex.Await(absl::Condition(
        +[](int* s) { return *s == 1; }, &stage));
    shared_value += 1;
    stage = 2;
    changed.Signal();
  });
  {
    absl::MutexLock lock(&mutex);
    shared_value += 1;
    stage = 1;
    while (stage != 2) changed.Wait(&mutex);
    shared_value += 1;
  }
  other.join();
}

int AsanOverflow(int index) {
  int* values = new int[4]();
  const int value = values[index];
  delete[] values;
  return value;
}

int UbsanOverflow(int value) { return value + 1; }

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "tsan-race") == 0) {
    TsanRace();
  } else if (std::strcmp(mode, "tsan-mutex") == 0) {
    TsanMutex();
  } else if (std::strcmp(mode, "asan-overflow") == 0) {
    std::printf("%d\n", AsanOverflow(argc + 2));  // index 4: one past
  } else if (std::strcmp(mode, "ubsan-overflow") == 0) {
    std::printf("%d\n", UbsanOverflow(INT_MAX - 2 + argc));  // INT_MAX
  } else {
    std::fprintf(stderr, "unknown mode \"%s\"\n", mode);
    return 2;
  }
  std::printf("ran %s\n", mode);
  return 0;
}
