"""Client-side token buckets per EC2 action: bursts pass, then calls are paced at the refill rate."""

from __future__ import annotations

from pytest import approx

from controller.clock import FakeClock
from controller.cloudprovider.aws.ratelimit import Buckets, RateLimiter


def limiter() -> tuple[FakeClock, list[float], RateLimiter]:
    clock, sleeps = FakeClock(), []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.step(seconds)

    return clock, sleeps, RateLimiter(clock.now, sleep)


def test_a_burst_passes_then_calls_wait_for_the_refill() -> None:
    clock, sleeps, rl = limiter()
    assert [rl.acquire("create_fleet") for _ in range(50)] == [0.0] * 50  # CreateFleet: burst 50
    assert rl.acquire("create_fleet") == approx(0.2)  # then 5 per second
    assert rl.acquire("create_fleet") == approx(0.2)
    assert sleeps == approx([0.2, 0.2]) and rl.waited == approx(0.4)
    clock.step(10)  # the bucket refills, up to its burst
    assert [rl.acquire("create_fleet") for _ in range(50)] == [0.0] * 50


def test_each_action_has_its_own_bucket_and_describes_share_one_rate() -> None:
    _, _, rl = limiter()
    for _ in range(5):
        assert rl.acquire("run_instances") == 0.0  # RunInstances: burst 5
    assert rl.acquire("run_instances") == approx(0.5)  # 2 per second
    assert rl.acquire("terminate_instances") == 0.0  # another bucket, still full
    assert all(rl.acquire("describe_instances") == 0.0 for _ in range(100))
    assert rl.acquire("describe_instances") == approx(0.05)  # Describe*: 20 per second after 100
    assert rl.acquire("get_parameter") == 0.0  # not paced


def test_ec2s_buckets_refuse_once_empty_and_say_when_a_token_is_back() -> None:
    buckets = Buckets()  # the same LIMITS, from EC2's side
    assert [buckets.take("create_fleet", 0.0) for _ in range(50)] == [0.0] * 50
    assert buckets.take("create_fleet", 0.0) == approx(0.2)  # refused: 5 per second
    assert buckets.take("create_fleet", 0.1) == approx(0.1)  # half a token back, still refused
    assert buckets.take("create_fleet", 0.2) == 0.0  # a whole one: taken
    assert buckets.take("create_fleet", 0.2) == approx(0.2)
    assert [buckets.take("run_instances", 0.0) for _ in range(6)][-1] == approx(0.5)  # burst 5, 2/s
    assert all(buckets.take("describe_instances", 0.0) == 0.0 for _ in range(100))
    assert buckets.take("describe_images", 0.0) == 0.0  # each Describe* action its own bucket
    assert buckets.take("describe_instances", 0.0) == approx(0.05)
    assert buckets.take("create_tags", 0.0) == 0.0  # not limited
    assert all(buckets.take("create_fleet", 1000.0) == 0.0 for _ in range(50))  # refilled to its burst only
    assert buckets.take("create_fleet", 1000.0) > 0


def test_ec2s_buckets_with_other_limits_and_a_clock_going_back() -> None:
    buckets = Buckets({"terminate_instances": (1.0, 1.0)}, describe=None)
    assert buckets.take("terminate_instances", 10.0) == 0.0
    assert buckets.take("terminate_instances", 9.0) == approx(1.0)  # an earlier time adds nothing
    assert buckets.take("describe_instances", 10.0) == 0.0  # Describe* unlimited here
