// Tests of the phase recorder (server/phases.h): spans opened in sequence
// and in scopes nest within the root, details are kept in order, and a
// scope ends once.
#include "server/phases.h"

#include <cstdint>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

// Returns true when [inner.begin, inner.end) lies within [outer.begin,
// outer.end).
bool Within(const PhaseSpan& inner, const PhaseSpan& outer) {
  return outer.begin_nanos <= inner.begin_nanos &&
         inner.end_nanos <= outer.end_nanos;
}

TEST(PhaseRecorderTest, SpansNestWithinTheRootAndFollowEachOther) {
  PhaseRecorder phases("call");
  {
    PhaseRecorder::Scope first = phases.Span("first");
    absl::SleepFor(absl::Milliseconds(2));
    PhaseRecorder::Scope inner = phases.Span("inner");
    absl::SleepFor(absl::Milliseconds(1));
  }  // inner ends, then first
  PhaseRecorder::Scope second = phases.Span("second");
  absl::SleepFor(absl::Milliseconds(1));
  second.End();
  phases.Finish();

  ASSERT_EQ(phases.spans().size(), 4u);
  const PhaseSpan& root = phases.spans()[0];
  const PhaseSpan& first = phases.spans()[1];
  const PhaseSpan& inner = phases.spans()[2];
  const PhaseSpan& second_span = phases.spans()[3];
  EXPECT_EQ(root.name, "call");
  EXPECT_EQ(root.begin_nanos, 0);
  EXPECT_EQ(first.name, "first");
  EXPECT_EQ(inner.name, "inner");
  EXPECT_EQ(second_span.name, "second");
  for (const PhaseSpan* span : {&first, &inner, &second_span}) {
    SCOPED_TRACE(span->name);
    EXPECT_TRUE(Within(*span, root));
    EXPECT_GE(span->duration(), absl::Milliseconds(1));
  }
  EXPECT_TRUE(Within(inner, first));
  EXPECT_GE(first.duration(), absl::Milliseconds(3));
  EXPECT_LE(first.end_nanos, second_span.begin_nanos);
  EXPECT_GE(phases.Elapsed(), root.duration());
}

// A span timed on the wall clock lands within the parent it is given, even
// where its wall times fall outside it (the two clocks drift apart).
TEST(PhaseRecorderTest, AddedSpansStayWithinTheirParent) {
  PhaseRecorder phases("call");
  absl::SleepFor(absl::Milliseconds(1));
  PhaseRecorder::Scope plan = phases.Span("plan");
  absl::SleepFor(absl::Milliseconds(1));
  plan.End();
  const PhaseSpan parent = plan.span();
  const absl::Time now = absl::Now();
  phases.AddSpan("early", now - absl::Seconds(10), now + absl::Seconds(10), {},
                 &parent);
  phases.AddSpan("free", now - absl::Seconds(10), now + absl::Seconds(10), {});
  phases.Finish();
  const PhaseSpan& early = phases.spans()[2];
  EXPECT_EQ(early.name, "early");
  EXPECT_EQ(early.begin_nanos, parent.begin_nanos);
  EXPECT_EQ(early.end_nanos, parent.end_nanos);
  const PhaseSpan& free = phases.spans()[3];
  // Within [0, the recorder's now] only (both on the recorder's clock).
  EXPECT_EQ(free.begin_nanos, 0);
  EXPECT_GE(free.end_nanos, parent.end_nanos);
}

TEST(PhaseRecorderTest, KeepsDetailsInOrderAlsoAfterTheEnd) {
  PhaseRecorder phases("call");
  PhaseRecorder::Scope plan = phases.Span("plan auto");
  plan.AddArg("buffers", int64_t{3});
  plan.End();
  const int64_t end = plan.span().end_nanos;
  plan.AddArg("winner", "inductor");
  plan.End();  // a second End changes nothing
  EXPECT_EQ(plan.span().end_nanos, end);
  phases.AddRootArg("peer", "ipv4:127.0.0.1");

  const PhaseSpan* found = phases.Find("plan auto");
  ASSERT_NE(found, nullptr);
  ASSERT_EQ(found->args.size(), 2u);
  EXPECT_EQ(found->args[0], (PhaseArg{"buffers", int64_t{3}}));
  EXPECT_EQ(found->args[1], (PhaseArg{"winner", std::string("inductor")}));
  EXPECT_EQ(phases.spans()[0].args.size(), 1u);
  EXPECT_EQ(phases.Find("nothing"), nullptr);
}

TEST(PhaseRecorderTest, FinishEndsTheRootOnce) {
  PhaseRecorder phases("call");
  absl::SleepFor(absl::Milliseconds(1));
  phases.Finish();
  const int64_t end = phases.spans()[0].end_nanos;
  EXPECT_GE(end, 1000000);
  absl::SleepFor(absl::Milliseconds(1));
  phases.Finish();
  EXPECT_EQ(phases.spans()[0].end_nanos, end);
}

TEST(PhaseRecorderTest, MovedScopeEndsTheSpanOnce) {
  PhaseRecorder phases("call");
  {
    PhaseRecorder::Scope original = phases.Span("moved");
    PhaseRecorder::Scope moved = std::move(original);
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_GE(phases.Find("moved")->duration(), absl::Milliseconds(1));
}

}  // namespace
}  // namespace memplan
