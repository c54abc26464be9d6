// ThreadSanitizer sees only the synchronization of instrumented code and of
// the libc functions it intercepts (pthread_mutex_lock, ...). Debian's
// Abseil is not instrumented, so to TSan an absl::Mutex, absl::CondVar or
// absl::Notification orders nothing, and every access guarded by one looks
// like a race (ours and gRPC's, which locks absl::Mutex too).
//
// This library, linked first into every program of the TSan build (see
// tests/sanitizers/CMakeLists.txt), defines the out-of-line Abseil entry
// points itself, so the dynamic linker binds every caller (our code, gRPC,
// Abseil's own calls between its functions) to them. Each calls the real
// function (found with dlsym(RTLD_NEXT)) and tells TSan what it does for
// ordering: a release of the mutex before it is unlocked, an acquire after
// it is locked. These annotations only add happens-before edges; they
// cannot make TSan report anything new.
//
// The names are Abseil's mangled names under Debian's inline namespace
// absl::debian3 (ABSL_OPTION_INLINE_NAMESPACE_NAME); a build against
// another Abseil fails below rather than annotate nothing.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#define MEMPLAN_STRINGIFY_INNER(x) #x
#define MEMPLAN_STRINGIFY(x) MEMPLAN_STRINGIFY_INNER(x)

namespace {

constexpr bool SameString(const char* a, const char* b) {
  return *a == *b && (*a == '\0' || SameString(a + 1, b + 1));
}
static_assert(SameString(MEMPLAN_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME),
                         "debian3"),
              "the mangled names below assume Abseil's inline namespace "
              "absl::debian3 (Debian 12's libabsl-dev)");

// Returns the definition of `mangled` that this library hides; aborts when
// there is none (a program that would otherwise call nothing).
void* Real(const char* mangled) {
  void* real = dlsym(RTLD_NEXT, mangled);
  if (real == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: no %s after this library\n", mangled);
    std::abort();
  }
  return real;
}

// REAL(type, "name") is the real function, looked up once.
#define REAL(type, name)                                               \
  ([] {                                                                \
    static const auto real = reinterpret_cast<type>(Real("_ZN" name)); \
    return real;                                                       \
  }())

using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;
using absl::Notification;
using absl::Time;

// A waiter's condition, between an acquire and a release of its mutex for
// TSan: Abseil evaluates it with the mutex held, but may have locked it
// inside Await or LockWhen and unlock it there again, out of sight of the
// definitions below (or evaluate it on the thread that unlocks).
class AnnotatedCondition {
 public:
  // Abseil may evaluate the condition on another thread (the one that
  // unlocks), having found it through its own, uninstrumented waiter queue:
  // the release here and the acquire in Eval order this construction before
  // that evaluation.
  AnnotatedCondition(const Condition& condition, Mutex* mutex)
      : condition_(condition),
        mutex_(mutex),
        annotated_(&AnnotatedCondition::Eval, this) {
    __tsan_release(this);
  }

  const Condition& get() const { return annotated_; }

 private:
  static bool Eval(void* self) {
    __tsan_acquire(self);
    auto* annotated = static_cast<AnnotatedCondition*>(self);
    __tsan_acquire(annotated->mutex_);
    const bool met = annotated->condition_.Eval();
    __tsan_release(annotated->mutex_);
    return met;
  }

  const Condition& condition_;
  Mutex* const mutex_;
  const Condition annotated_;
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

#define MU "4absl7debian35Mutex"
#define CV "4absl7debian37CondVar"

void Mutex::Lock() {
  REAL(void (*)(Mutex*), MU "4LockEv")(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() {
  REAL(void (*)(Mutex*), MU "10ReaderLockEv")(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  const bool locked = REAL(bool (*)(Mutex*), MU "7TryLockEv")(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  const bool locked = REAL(bool (*)(Mutex*), MU "13ReaderTryLockEv")(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  __tsan_release(this);
  REAL(void (*)(Mutex*), MU "6UnlockEv")(this);
}

void Mutex::ReaderUnlock() {
  __tsan_release(this);
  REAL(void (*)(Mutex*), MU "12ReaderUnlockEv")(this);
}

void Mutex::LockWhen(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&), MU "8LockWhenERKNS0_9ConditionE")
  (this, AnnotatedCondition(cond, this).get());
  __tsan_acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&),
       MU "14ReaderLockWhenERKNS0_9ConditionE")
  (this, AnnotatedCondition(cond, this).get());
  __tsan_acquire(this);
}

// The timed forms hold the mutex on return whatever they return.
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  const bool met =
      REAL(bool (*)(Mutex*, const Condition&, Duration),
           MU "19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE")(
          this, AnnotatedCondition(cond, this).get(), timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  const bool met = REAL(bool (*)(Mutex*, const Condition&, Time), MU
                        "20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE")(
      this, AnnotatedCondition(cond, this).get(), deadline);
  __tsan_acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  const bool met =
      REAL(bool (*)(Mutex*, const Condition&, Duration),
           MU "25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE")(
          this, AnnotatedCondition(cond, this).get(), timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  const bool met =
      REAL(bool (*)(Mutex*, const Condition&, Time),
           MU "26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE")(
          this, AnnotatedCondition(cond, this).get(), deadline);
  __tsan_acquire(this);
  return met;
}

// Await unlocks while it waits and locks again before it returns.
void Mutex::Await(const Condition& cond) {
  __tsan_release(this);
  REAL(void (*)(Mutex*, const Condition&), MU "5AwaitERKNS0_9ConditionE")
  (this, AnnotatedCondition(cond, this).get());
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  __tsan_release(this);
  const bool met = REAL(bool (*)(Mutex*, const Condition&, Duration), MU
                        "16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE")(
      this, AnnotatedCondition(cond, this).get(), timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  __tsan_release(this);
  const bool met = REAL(bool (*)(Mutex*, const Condition&, Time),
                        MU "17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE")(
      this, AnnotatedCondition(cond, this).get(), deadline);
  __tsan_acquire(this);
  return met;
}

// A CondVar wait unlocks `mu` and locks it again before it returns.
void CondVar::Wait(Mutex* mu) {
  __tsan_release(mu);
  REAL(void (*)(CondVar*, Mutex*), CV "4WaitEPNS0_5MutexE")(this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  __tsan_release(mu);
  const bool timed_out =
      REAL(bool (*)(CondVar*, Mutex*, Duration), CV
           "15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE")(this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  __tsan_release(mu);
  const bool timed_out =
      REAL(bool (*)(CondVar*, Mutex*, Time),
           CV "16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE")(this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

// A Notification's waiters may return on an atomic flag without locking.
void Notification::Notify() {
  __tsan_release(this);
  REAL(void (*)(Notification*), "4absl7debian312Notification6NotifyEv")(this);
}

void Notification::WaitForNotification() const {
  REAL(void (*)(const Notification*),
       "K4absl7debian312Notification19WaitForNotificationEv")
  (this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  const bool notified =
      REAL(bool (*)(const Notification*, Duration),
           "K4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_"
           "8DurationE")(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  const bool notified =
      REAL(bool (*)(const Notification*, Time),
           "K4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_"
           "4TimeE")(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
