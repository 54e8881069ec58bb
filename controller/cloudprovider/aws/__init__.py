"""The AWS cloud provider: EC2 through boto3 behind the narrow adapter of `api.py`.

`provider.AWSCloudProvider` (the `CloudProvider` protocol), with its parts: `instancetypes.py`
(EC2 types → InstanceType), `overhead.py` / `amifamily.py` / `shaping.py` (the AWS capacity
math, also used by the simulated provider), `pricing.py` / `pricegen.py` (prices), `resolver.py`
(AWSNodeTemplate → subnets, security groups, AMIs), `userdata.py`, `launchtemplates.py`,
`fleet.py` (the launch plan and CreateFleet request), `interruption.py` (SQS events).
Importing this package imports no boto3.
"""
