"""The read-only dashboard: where its data comes from and what the pages show.

- `reader.py` — the only way in: `ReadOnlyKube` (list/watch/get of the kube API, nothing else)
  and `ControllerAPI` (GET on the controller's HTTP API, short timeouts).
- `source.py` — `DashboardSource`: one `ClusterState` kept by informers over `ReadOnlyKube`,
  the controller's answers (cached a few seconds), a one-hour history of nodes and cost.
- `model.py`, `nodes.py`, `provisioners.py`, `pending.py` — pure: `DashboardInputs` → the JSON-ready data
  of each page; the HTML templates render exactly this data, the JSON API returns it.
Views live in `webapp/blueprints/dashboard.py` (HTML) and `webapp/blueprints/api.py` (JSON).
"""
