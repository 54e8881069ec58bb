"""The narrow adapter around boto3, and the typed errors every AWS call ends in.

`Transport` is the seam: one method, `call(service, operation, params) -> dict`, raising
`ApiError(code, message)`. `Boto3Transport` is the real one (boto3 clients for ec2, ssm, sqs,
pricing and events, with an optional endpoint URL so the same code talks to moto_server); tests
use a fake transport that records calls and injects errors (`tests/fakes/aws.py`).

`AWSApi` is what the provider calls: `call()` first takes a token from the action's client-side
bucket (`ratelimit.py`: EC2's per-action pacing; calls, refusals and the seconds waited are counted on
/metrics, `karpy_cloudprovider_api_*`), then retries throttling (`RequestLimitExceeded`,
`Throttling`…) with exponential backoff — still throttled after the last attempt, the call fails
with `AWSThrottledError` (an `AWSError` and the protocol's `ThrottledError`: callers retry later,
nothing failed) —, `pages()` follows `NextToken`, and every failure becomes
an `AWSError` whose message names the call and the resource ("ec2 CreateFleet (provisioner
default): InsufficientInstanceCapacity: …"). Nothing here decides anything.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from controller.cloudprovider.aws.ratelimit import RateLimiter
from controller.cloudprovider.errors import CloudProviderError, ThrottledError
from controller.metrics import CLOUD_API_CALLS, CLOUD_API_THROTTLE_SECONDS, CLOUD_API_THROTTLED

log = logging.getLogger(__name__)

THROTTLING_CODES = frozenset(
    {"RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException", "RequestThrottled"}
)
SERVICES = ("ec2", "ssm", "sqs", "pricing", "events", "eks")


class ApiError(Exception):
    """What a transport raises: the AWS error code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class AWSError(CloudProviderError):
    """An AWS call failed; the message names the call, the resource and the cause."""

    def __init__(self, service: str, operation: str, resource: str, code: str, message: str) -> None:
        where = f" ({resource})" if resource else ""
        super().__init__(f"{service} {_camel(operation)}{where}: {code}: {message}")
        self.service, self.operation, self.resource = service, operation, resource
        self.code = code
        self.aws_message = message


class AWSThrottledError(AWSError, ThrottledError):
    """EC2 (or another service) still throttled the call after every retry; nothing was done."""

    def __init__(
        self, service: str, operation: str, resource: str, code: str, message: str, retry_after: float
    ) -> None:
        super().__init__(service, operation, resource, code, message)
        self.retry_after = retry_after


class Transport(Protocol):
    def call(self, service: str, operation: str, params: Mapping[str, Any]) -> dict[str, Any]: ...


def _camel(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_"))


class Boto3Transport:
    """boto3 clients, created lazily per service; boto3's own retries are off (AWSApi retries)."""

    def __init__(self, region: str, endpoint_url: str | None = None, pricing_region: str = "us-east-1") -> None:
        import boto3
        from botocore.config import Config

        self._session = boto3.session.Session(region_name=region)
        self._config = Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=30)
        self._long_poll_config = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=40)
        self._endpoint_url = endpoint_url or None
        self._region = region
        self._pricing_region = pricing_region
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()

    def _client(self, service: str) -> Any:
        with self._clients_lock:  # a boto3 session is not thread-safe; its clients are
            client = self._clients.get(service)
            if client is None:
                region = self._pricing_region if service == "pricing" else self._region
                config = self._long_poll_config if service == "sqs" else self._config
                client = self._session.client(
                    service, region_name=region, endpoint_url=self._endpoint_url, config=config
                )
                self._clients[service] = client
            return client

    def call(self, service: str, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            result: dict[str, Any] = getattr(self._client(service), operation)(**params)
        except ClientError as err:
            error = err.response.get("Error", {})
            raise ApiError(str(error.get("Code", "Unknown")), str(error.get("Message", err))) from err
        except BotoCoreError as err:
            raise ApiError(type(err).__name__, str(err)) from err
        result.pop("ResponseMetadata", None)
        return result


class AWSApi:
    def __init__(
        self,
        transport: Transport,
        sleep: Callable[[float], None] = time.sleep,
        attempts: int = 5,
        base_delay: float = 0.2,
        limiter: RateLimiter | None = None,
    ) -> None:
        self.transport = transport
        self._sleep = sleep
        self.limiter = limiter or RateLimiter(sleep=sleep)
        self.calls: dict[str, int] = {}  # operation → calls sent (retries included)
        self._calls_lock = threading.Lock()  # calls come from several threads (parallel launches, batches)
        self._attempts = attempts
        self._base_delay = base_delay

    def call(self, service: str, operation: str, resource: str = "", **params: Any) -> dict[str, Any]:
        for attempt in range(self._attempts):
            waited = self.limiter.acquire(operation)
            with self._calls_lock:
                self.calls[operation] = self.calls.get(operation, 0) + 1
            CLOUD_API_CALLS.labels(provider="aws", operation=operation).inc()
            if waited:
                CLOUD_API_THROTTLE_SECONDS.labels(provider="aws", operation=operation).inc(waited)
            try:
                return self.transport.call(service, operation, params)
            except ApiError as err:
                if err.code in THROTTLING_CODES:
                    CLOUD_API_THROTTLED.labels(provider="aws", operation=operation).inc()
                if err.code in THROTTLING_CODES and attempt + 1 < self._attempts:
                    delay = self._base_delay * 2**attempt
                    CLOUD_API_THROTTLE_SECONDS.labels(provider="aws", operation=operation).inc(delay)
                    log.info("%s %s throttled, retrying in %.1fs", service, _camel(operation), delay)
                    self._sleep(delay)
                    continue
                if err.code in THROTTLING_CODES:
                    retry_after = self._base_delay * 2**self._attempts
                    raise AWSThrottledError(service, operation, resource, err.code, err.message, retry_after) from err
                raise AWSError(service, operation, resource, err.code, err.message) from err
        raise AssertionError("unreachable")  # pragma: no cover

    def pages(self, service: str, operation: str, key: str, resource: str = "", **params: Any) -> list[Any]:
        """Every item under `key` across all pages (NextToken)."""
        items: list[Any] = []
        token = None
        while True:
            page = self.call(service, operation, resource, **params, **({"NextToken": token} if token else {}))
            items.extend(page.get(key) or [])
            token = page.get("NextToken")
            if not token:
                return items
