"""Cluster state: the one in-memory view of the cluster (`cluster.ClusterState`), fed by watches
(`informer.py`), read through immutable snapshots (`snapshot.Snapshot`, views built by
`views.py`). Provisioning and deprovisioning decide nothing until `ClusterState.synced()`.
"""
