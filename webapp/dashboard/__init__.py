"""What people see and do (docs/dashboard.md): ``pages`` (the templates), ``api`` (the JSON API
and ``/healthz``), ``feeds`` (the live websocket feeds of the pages), ``actions`` (staff actions,
audited) and ``access`` (who may read and who may act)."""
