"""The simulated cloud: an AWS-shaped instance-type catalog with a deterministic price model."""
