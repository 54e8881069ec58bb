"""`EC2Batchers`: CreateFleet, DescribeInstances and TerminateInstances batched as Karpenter does.

The AWS provider launches, describes and terminates one instance per caller; concurrent callers
(a provisioning pass launches its nodes in parallel) share calls here through
`cloudprovider/batcher.py`, with Karpenter's windows and batcher names:

- `create_fleet(params)`: requests with identical parameters (one instance each) become one
  CreateFleet with `TotalTargetCapacity` = their number. The instances of the answer are dealt
  out one per caller, in order; callers left without one (partial fulfilment) get an answer with
  no instance and the fleet's errors — or, if EC2 gave none, an `UnfulfillableCapacity` error
  saying how many were launched — so the provider tells them insufficient capacity. Instances
  beyond the request (EC2 never should) are terminated at once: no instance is left with no
  caller. A failed call is every caller's error.
- `describe(instance_id)`: one DescribeInstances for every ID of the batch; the instance as EC2
  reports it, or None when EC2 does not know it. One unknown ID fails EC2's whole call
  (`InvalidInstanceID.NotFound`), so then each ID is asked alone and only the unknown one's
  caller hears of it.
- `terminate(instance_id)`: one TerminateInstances for the batch; an instance the answer does not
  show shutting down (or the whole call failing for one bad ID) is retried alone, so one unknown
  or protected instance fails only its own caller.

A throttled batch (`AWSThrottledError`, after `AWSApi`'s own retries) is every caller's error and
is not retried one by one, which would only add calls to a throttled account.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from controller.cloudprovider.aws.api import AWSApi, AWSError, AWSThrottledError
from controller.cloudprovider.batcher import (
    CREATE_FLEET_WINDOW,
    DESCRIBE_INSTANCES_WINDOW,
    TERMINATE_INSTANCES_WINDOW,
    Batcher,
    Window,
)
from controller.core import labels as L

log = logging.getLogger(__name__)

STOPPING = ("shutting-down", "terminated")
Answer = dict[str, Any]


class EC2Batchers:
    def __init__(
        self,
        api: AWSApi,
        fleet: Window = CREATE_FLEET_WINDOW,
        describe: Window = DESCRIBE_INSTANCES_WINDOW,
        terminate: Window = TERMINATE_INSTANCES_WINDOW,
    ) -> None:
        self._api = api
        self.fleets: Batcher[tuple[str, Mapping[str, Any]], Answer] = Batcher(
            "create_fleet", fleet, self._create_fleets, key=lambda item: item[0]
        )
        self.describes: Batcher[str, Answer | None] = Batcher(
            "describe_instances", describe, self._describe_all, key=lambda _: ""
        )
        self.terminations: Batcher[str, Answer] = Batcher(
            "terminate_instances", terminate, self._terminate_all, key=lambda _: ""
        )

    def create_fleet(self, params: Mapping[str, Any]) -> Answer:
        """This request's share of a CreateFleet (`params` ask for one instance)."""
        return self.fleets.submit((json.dumps(params, sort_keys=True, default=str), params))

    def describe(self, instance_id: str) -> Answer | None:
        return self.describes.submit(instance_id)

    def terminate(self, instance_id: str) -> Answer:
        """The instance's state change; `AWSError` when EC2 refused this instance."""
        return self.terminations.submit(instance_id)

    # Executors ---------------------------------------------------------------------------------

    def _create_fleets(self, items: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Answer]:
        params = copy.deepcopy(dict(items[0][1]))
        asked = len(items)
        params["TargetCapacitySpecification"]["TotalTargetCapacity"] = asked
        answer = self._api.call("ec2", "create_fleet", _fleet_resource(params, asked), **params)
        launched = [
            (group, instance_id)
            for group in answer.get("Instances") or []
            for instance_id in group.get("InstanceIds") or []
        ]
        errors = list(answer.get("Errors") or [])
        shares: list[Answer] = [
            {**answer, "Instances": [{**group, "InstanceIds": [instance_id]}], "Errors": errors}
            for group, instance_id in launched[:asked]
        ]
        if len(shares) < asked:
            if not errors:
                message = f"CreateFleet launched {len(launched)} of the {asked} instances asked for"
                errors = [{"ErrorCode": "UnfulfillableCapacity", "ErrorMessage": message}]
            shares += [{**answer, "Instances": [], "Errors": errors}] * (asked - len(shares))
        for _, instance_id in launched[asked:]:
            log.warning("CreateFleet launched more instances than asked for; terminating %s", instance_id)
            try:
                self._api.call("ec2", "terminate_instances", instance_id, InstanceIds=[instance_id])
            except AWSError as err:  # garbage collection finds it: it carries karpy's tags
                log.warning("terminating surplus instance %s: %s", instance_id, err)
        return shares

    def _describe_all(self, ids: Sequence[str]) -> list[Answer | Exception | None]:
        unique = sorted(set(ids))
        found: dict[str, Answer | Exception | None] = {}
        try:
            reservations = self._api.pages(
                "ec2", "describe_instances", "Reservations", _ids_resource(unique), InstanceIds=unique
            )
            for reservation in reservations:
                for instance in reservation.get("Instances") or []:
                    found[str(instance["InstanceId"])] = dict(instance)
            found.update({i: None for i in unique if i not in found})
        except AWSError as err:
            if isinstance(err, AWSThrottledError) or len(unique) == 1 or not err.code.startswith("InvalidInstanceID"):
                return [err] * len(ids)
            found = {i: self._describe_one(i) for i in unique}
        return [found[i] for i in ids]

    def _describe_one(self, instance_id: str) -> Answer | Exception | None:
        try:
            answer = self._api.call("ec2", "describe_instances", instance_id, InstanceIds=[instance_id])
        except AWSError as err:
            return None if err.code.startswith("InvalidInstanceID") else err
        instances = [i for r in answer.get("Reservations") or [] for i in r.get("Instances") or []]
        return dict(instances[0]) if instances else None

    def _terminate_all(self, ids: Sequence[str]) -> list[Answer | Exception]:
        unique = sorted(set(ids))
        done: dict[str, Answer | Exception] = {}
        try:
            answer = self._api.call("ec2", "terminate_instances", _ids_resource(unique), InstanceIds=unique)
            for change in answer.get("TerminatingInstances") or []:
                if (change.get("CurrentState") or {}).get("Name") in STOPPING:
                    done[str(change["InstanceId"])] = dict(change)
        except AWSError as err:
            if isinstance(err, AWSThrottledError) or len(unique) == 1:
                return [err] * len(ids)
            log.info("terminating %d instances together: %s; terminating them one by one", len(unique), err)
        for instance_id in (i for i in unique if i not in done):
            done[instance_id] = self._terminate_one(instance_id)
        return [done[i] for i in ids]

    def _terminate_one(self, instance_id: str) -> Answer | Exception:
        try:
            answer = self._api.call("ec2", "terminate_instances", instance_id, InstanceIds=[instance_id])
        except AWSError as err:
            return err
        changes = answer.get("TerminatingInstances") or []
        return dict(changes[0]) if changes else {"InstanceId": instance_id}


def _fleet_resource(params: Mapping[str, Any], asked: int) -> str:
    tags = {t["Key"]: t["Value"] for spec in params.get("TagSpecifications") or () for t in spec.get("Tags") or ()}
    provisioner = tags.get(L.PROVISIONER_NAME, "")
    what = f"provisioner {provisioner}" if provisioner else "fleet"
    return what if asked == 1 else f"{what}, {asked} instances"


def _ids_resource(ids: Sequence[str]) -> str:
    return ids[0] if len(ids) == 1 else f"{len(ids)} instances"
