"""Cloud providers: what can be launched (instance types) and launching it.

`simulated/` is an AWS-shaped catalog that needs no account; `aws/` talks to EC2. Both hand the
scheduler `controller.scheduling.types.InstanceType` objects.
"""
